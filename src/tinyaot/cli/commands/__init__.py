"""One module per command. Each names itself (NAME, HELP), adds its arguments to its subparser (add_arguments) and
runs a checked Request (run(request, feedback) -> exit code); SPINNER = False for a command that shows its own
progress or none."""
from tinyaot.cli.commands import compile as compile_command
from tinyaot.cli.commands import demo, export, ops, profile, report, run
from tinyaot.cli.commands import eval as eval_command

COMMANDS = (compile_command, run, report, export, profile, eval_command, ops, demo)  # in the order --help lists them
BY_NAME = {command.NAME: command for command in COMMANDS}
