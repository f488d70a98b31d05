use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::Parser;

use luzia::cli::{Cli, Command};
use luzia::commands;
use luzia::config::{Config, Overrides};

fn main() -> ExitCode {
    let cli = Cli::parse(); // usage errors exit 2 from here
    match run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("luzia: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<u8> {
    let overrides = Overrides {
        config: cli.global.config.clone(),
        jobs_dir: cli.global.jobs_dir.clone(),
    };
    let cfg = Config::load(&overrides)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match &cli.command {
        Command::Jobs(args) => commands::jobs::run(&cfg, args, &mut out)?,
        Command::Logs(args) => commands::logs::run(&cfg, args, &mut out)?,
        Command::DemoAgent(args) => commands::demo_agent::run(&args.job_dir, &args.scenario)?,
        Command::Tui(args) => {
            drop(out);
            return commands::tui::run(&cfg, args);
        }
    }
    out.flush()?;
    Ok(0)
}

/// `luzia jobs | head` closing the pipe early is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .any(|io| io.kind() == io::ErrorKind::BrokenPipe)
}
