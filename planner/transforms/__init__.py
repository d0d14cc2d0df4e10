"""The logical transforms: one module per rewrite, each a pure function IR -> IR that keeps
the plan's output schema; ``planner.pipeline`` orders them."""
