//! `luzia notify --watch | --once | --test`: the `[notify]` command run for each new event
//! (docs/notifications.md). It only reads the jobs, so a read-only config refuses none of it;
//! it writes one file of its own, the ledger of what was sent, in the user's state directory.

use anyhow::{Result, anyhow};

use crate::cli::NotifyArgs;
use crate::config::Config;
use crate::notifier::{Notifier, once, state_dir, watch};

/// Writes to stdout unlocked, a line at a time: `--watch` writes from its sending thread too.
pub fn run(cfg: &Config, args: &NotifyArgs) -> Result<u8> {
    let out = &mut super::stdout::stdout();
    let settings = cfg.notify.as_ref().ok_or_else(|| {
        let file = cfg.file_to_edit();
        anyhow!(
            "there is no [notify] table in {file}: add one with the command to run, such as\n\n  \
             [notify]\n  command = [\"notify-send\", \"{{title}}\", \"{{body}}\"]\n\n\
             then check it with `luzia notify --test` (`luzia help notify` says more)"
        )
    })?;
    let state = state_dir()?;
    if args.test {
        let n = Notifier::new(cfg, settings, &cfg.jobs_dir, &state);
        return Ok(n.test(out));
    }
    let root = super::jobs_root(cfg)?;
    let n = Notifier::new(cfg, settings, root, &state);
    if args.watch {
        watch(n, out)
    } else {
        once(&n, out)
    }
}
