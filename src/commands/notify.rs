//! `luzia notify --watch | --once | --test`: the `[notify]` command run for each new event
//! (docs/notifications.md). It only reads the jobs, so a read-only config refuses none of it;
//! it writes one file of its own, the ledger of what was sent, in the user's state directory.

use anyhow::{Result, anyhow};

use crate::cli::NotifyArgs;
use crate::config::Config;
use crate::notifier::telegram::{self, Bridge};
use crate::notifier::{Notifier, once, state_dir, watch};

/// Writes to stdout unlocked, a line at a time: `--watch` writes from its sending thread too.
pub fn run(cfg: &Config, args: &NotifyArgs) -> Result<u8> {
    let out = &mut super::stdout::stdout();
    let settings = cfg.notify.as_ref();
    let telegram = cfg.telegram.as_ref();
    // The bridge runs only with --watch (and says hello with --test); --once is the command's.
    if settings.is_none() && (telegram.is_none() || args.once) {
        let file = cfg.file_to_edit();
        let why = if telegram.is_some() {
            " ([telegram] runs only with --watch)"
        } else {
            ""
        };
        return Err(anyhow!(
            "there is no [notify] table in {file}{why}: add one with the command to run, such \
             as\n\n  [notify]\n  command = [\"notify-send\", \"{{title}}\", \"{{body}}\"]\n\n\
             then check it with `luzia notify --test` (`luzia help notify` says more), or a \
             [telegram] table to answer from your phone (docs/notifications.md)"
        ));
    }
    let state = state_dir()?;
    if args.test {
        let mut code = 0;
        if settings.is_some() {
            let n = Notifier::new(cfg, settings, &cfg.jobs_dir, &state);
            code = n.test(out);
        }
        if let Some(tg) = telegram {
            code = code.max(telegram::test(tg, &telegram::token_from_env()?, out)?);
        }
        return Ok(code);
    }
    // A watcher may well start before the first job: the per-user root is made then, as the
    // first job would make it. A root named by the config, the environment or a flag must exist.
    let root = if args.watch && cfg.jobs_dir_source == crate::config::Source::User {
        super::ensure_jobs_root(cfg)?
    } else {
        super::jobs_root(cfg)?
    };
    let n = Notifier::new(cfg, settings, root, &state);
    if args.watch {
        let bridge = match telegram {
            Some(tg) => Some(Bridge::start(
                cfg,
                tg,
                &telegram::token_from_env()?,
                n.root(),
                &state,
            )?),
            None => None,
        };
        watch(n, bridge, out)
    } else {
        once(&n, out)
    }
}
