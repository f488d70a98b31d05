use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::Parser;

use luzia::cli::{Cli, Command};
use luzia::commands;
use luzia::config::{Config, Overrides};

fn main() -> ExitCode {
    let result = match Cli::try_parse() {
        Ok(cli) => run(&cli),
        Err(e) => return usage(&e),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => fail(&e),
    }
}

/// What clap has to say instead of a command: the help or the version on stdout, a usage error
/// on stderr (exit 2). Printing the help can fail as any output can.
fn usage(e: &clap::Error) -> ExitCode {
    let code = ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    let printed = e.print().and_then(|()| io::stdout().flush());
    match printed {
        // A usage error is said with its own exit code even where stderr takes nothing.
        Err(_) if e.use_stderr() => code,
        Err(err) => fail(&commands::stdout::failed(err).into()),
        Ok(()) => code,
    }
}

/// A command's error on stderr, exit 1; a closed pipe on stdout ends quietly, as for other
/// Unix tools. Nothing here may fail louder: a stderr that cannot be written is let be.
fn fail(e: &anyhow::Error) -> ExitCode {
    if is_broken_pipe(e) {
        return ExitCode::SUCCESS;
    }
    let _ = writeln!(io::stderr(), "luzia: error: {}", commands::describe(e));
    ExitCode::from(1)
}

fn run(cli: &Cli) -> anyhow::Result<u8> {
    let mut out = BufWriter::new(commands::stdout::stdout_locked());
    // The agent's commands work in their job directory alone: an operator's config (or a typo
    // in it) must never stop an agent from asking.
    let code = match &cli.command {
        Command::Ask(args) => commands::agent::ask(args, &mut out)?,
        Command::Gate(args) => commands::agent::gate(args, &mut out)?,
        Command::Progress(args) => commands::agent::progress(args)?,
        Command::Mcp(args) => commands::mcp::run(args)?,
        Command::DemoAgent(args) => commands::demo_agent::run(args)?,
        // Installing needs no config: a broken one must not stop a completion script.
        Command::Completions(args) => commands::install::completions(args.shell, &mut out)?,
        Command::Man => commands::install::man_page(&mut out)?,
        // It writes the config: an existing one, broken or not, is not read.
        Command::Init(args) => commands::init::run(&cli.global, args, &mut out)?,
        // A config that does not load is one of the things it reports.
        Command::Doctor(args) => {
            let overrides = Overrides {
                config: cli.global.config.clone(),
                jobs_dir: cli.global.jobs_dir.clone(),
            };
            commands::doctor::run(&overrides, args, &mut out)?
        }
        // Asked on every Tab: quiet whatever the config says (it reads it itself).
        Command::Candidates(args) => commands::complete::candidates(&cli.global, args, &mut out)?,
        operator => {
            let overrides = Overrides {
                config: cli.global.config.clone(),
                jobs_dir: cli.global.jobs_dir.clone(),
            };
            if let Command::Supervise(_) | Command::LimitWaiter(_) = operator {
                commands::run::detach();
            }
            let cfg = Config::load(&overrides)?;
            match operator {
                Command::Jobs(args) if !args.hosts.is_empty() || args.all_hosts => {
                    commands::hosts::jobs(&cfg, args, &mut out)?
                }
                Command::Questions(args) if !args.hosts.is_empty() || args.all_hosts => {
                    commands::hosts::questions(&cfg, args, &mut out)?
                }
                Command::Status(args) if !args.hosts.is_empty() || args.all_hosts => {
                    commands::hosts::status(&cfg, args, &mut out)?
                }
                Command::Jobs(args) => commands::jobs::run(&cfg, args, &mut out).map(|()| 0)?,
                Command::Logs(args) => commands::logs::run(&cfg, args, &mut out).map(|()| 0)?,
                Command::Status(args) => commands::status::run(&cfg, args, &mut out)?,
                Command::Questions(args) => commands::questions::list(&cfg, args, &mut out)?,
                Command::Answer(args) => commands::questions::answer(&cfg, args, &mut out)?,
                Command::Approve(args) => commands::questions::approve(&cfg, args, &mut out)?,
                Command::Deny(args) => commands::questions::deny(&cfg, args, &mut out)?,
                Command::Run(args) => commands::run::run(&cfg, args, &mut out)?,
                Command::Shorthand(words) => commands::run::shorthand(&cfg, words, &mut out)?,
                Command::Kill(args) => commands::run::kill(&cfg, args, &mut out)?,
                Command::Retry(args) => commands::run::retry(&cfg, args, &mut out)?,
                Command::Reply(args) => commands::session::reply(&cfg, args, &mut out)?,
                Command::Attach(args) => commands::session::attach(&cfg, args)?,
                Command::Diff(args) => commands::review::diff(&cfg, args, &mut out)?,
                Command::Merge(args) => commands::review::merge(&cfg, args, &mut out)?,
                Command::Discard(args) => commands::review::discard(&cfg, args, &mut out)?,
                Command::Checks(args) => commands::checks::run(&cfg, args, &mut out)?,
                Command::Push(args) => commands::review::push(&cfg, args, &mut out)?,
                Command::Pr(args) => commands::review::pr(&cfg, args, &mut out)?,
                Command::Queue(args) => commands::run::queue(&cfg, args, &mut out)?,
                Command::Gc(args) => commands::gc::run(&cfg, args, &mut out)?,
                Command::Supervise(args) => commands::run::supervise(&cfg, args)?,
                Command::LimitWaiter(args) => commands::limit_waiter::run(&cfg, args)?,
                // Its sending thread writes to stdout too: this thread must not hold it locked.
                Command::Notify(args) => {
                    drop(out);
                    return commands::notify::run(&cfg, args);
                }
                Command::Tui(args) => {
                    drop(out);
                    return commands::tui::run(&cfg, args);
                }
                // It writes and flushes stdout itself, line by line, as changes come.
                Command::Watch(args) => {
                    drop(out);
                    return commands::watch::run(&cfg, args);
                }
                Command::Ask(_)
                | Command::Gate(_)
                | Command::Progress(_)
                | Command::Mcp(_)
                | Command::DemoAgent(_)
                | Command::Completions(_)
                | Command::Init(_)
                | Command::Doctor(_)
                | Command::Candidates(_)
                | Command::Man => {
                    unreachable!("handled above")
                }
            }
        }
    };
    out.flush()?;
    Ok(code)
}

/// `luzia jobs | head` closing the pipe early is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}
