"""``pobo-modeler`` subcommands: one module per command group, each with ``register(app)``."""
