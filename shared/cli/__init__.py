"""What both command lines (``pobo-curator`` and ``pobo-modeler``) and the demo share, and nothing else imports:
tables that stay readable wherever they are printed (:mod:`shared.cli.terminal`) and the options every command
declares once (:mod:`shared.cli.command_line`). It imports nothing else of pobo (``.importlinter``)."""
