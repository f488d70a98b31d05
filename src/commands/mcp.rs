//! `luzia mcp --job-dir DIR`: the stdio MCP server Claude Code starts for a job (named in the
//! job's `mcp.json`). stdin and stdout carry the protocol; a signal (SIGTERM, SIGINT, SIGHUP)
//! ends it as its client going away does: what it asked the operator is withdrawn first.

use std::os::fd::AsFd;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};

use crate::cli::McpArgs;
use crate::jobs::hitl::mcp::server::{Calls, Output, Server};

/// The exit code after a signal, as a shell reports a process it ended (128 + SIGTERM).
const EXIT_SIGNALLED: i32 = 143;

pub fn run(args: &McpArgs) -> Result<u8> {
    let dir = &args.dir.job_dir;
    if !dir.is_dir() {
        bail!(
            "{} is not a job directory: run `luzia mcp` with --job-dir DIR (or LUZIA_JOB_DIR) \
             naming the job it serves",
            dir.display()
        );
    }
    let calls = Calls::default();
    watch_signals(calls.clone())?;
    // A file of its own on stdout: `main` holds std's stdout lock for the whole command, and
    // responses are written from the calls' threads.
    let stdout = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot use stdout")?;
    let out: Output = Arc::new(Mutex::new(std::fs::File::from(stdout)));
    Server::new(dir, out, calls).run(std::io::stdin().lock())?;
    Ok(0)
}

/// On a signal: stops every waiting call, waits for their withdrawals, and exits.
fn watch_signals(calls: Calls) -> Result<()> {
    super::signals::on_stop_signal(move |_| {
        calls.stop_all();
        calls.join();
        std::process::exit(EXIT_SIGNALLED);
    })
    .context("cannot start the signal watcher")
}
