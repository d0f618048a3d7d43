import { CommandRunner } from 'nest-commander';

/** commander's Command as nest-commander hands it over (its own commander version, not the top-level one). */
type Command = Parameters<CommandRunner['setCommand']>[0];

/**
 * Every `ags` command: a usage error (unknown option, missing argument or option, an argument
 * too many) prints the message and the command's usage on stderr and exits 1. nest-commander
 * builds each command apart, so commander's settings are not inherited and are set here.
 */
export abstract class CliCommand extends CommandRunner {
  override setCommand(command: Command): this {
    command.showHelpAfterError().allowExcessArguments(false);
    return super.setCommand(command);
  }
}

/**
 * A command that only holds subcommands (`ags`, `ags orgs`, ...). nest-commander gives every
 * command an action, so commander hands an unknown subcommand to `run` as an argument instead
 * of refusing it: refused here. Run alone it prints its usage, as `--help` does.
 */
export abstract class CommandGroup extends CliCommand {
  override setCommand(command: Command): this {
    super.setCommand(command);
    // The arguments are the unknown subcommand, reported by `run` rather than as "too many arguments".
    command.allowExcessArguments(true);
    return this;
  }

  async run(args: string[]): Promise<void> {
    if (args.length === 0 || (args.length === 1 && args[0] === 'help')) this.command.help();
    this.command.error(`error: unknown command '${args[0]}'`, { code: 'commander.unknownCommand' });
  }
}
