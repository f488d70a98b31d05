//! The sections of luzia(1) that clap does not write: the cockpit's keys (from the action
//! table, so the page never drifts from the keys), the environment, the files, and the exit
//! statuses.

use std::io::{self, Write};

use crate::commands::agent::{EXIT_DENIED, EXIT_NO_ANSWER};
use crate::commands::status::ALERT_EXIT;
use crate::config::{DEFAULT_JOBS_DIR, DEFAULT_NOTIFICATIONS_LOG, DEFAULT_QUEUE_DIR};
use crate::tui::action::{Defaults, Section};

/// Every section below, in the order man pages put them.
pub fn write_sections(out: &mut dyn Write) -> io::Result<()> {
    write_keys(out)?;
    write_environment(out)?;
    write_files(out)?;
    write_exit_status(out)
}

/// KEYS: each mode of the cockpit, each action with its default keys and what it does.
fn write_keys(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, ".SH KEYS")?;
    writeln!(
        out,
        "The keys of \\fBluzia tui\\fR, as they are by default. Each mode's keys are rebound \
         in the config's table named beside it, by the action's name: [keys] quit = [\"q\", \
         \"ctrl\\-q\"]."
    )?;
    for &section in Section::ALL {
        writeln!(
            out,
            ".SS {} ({})",
            roff(&capitalized(section.title())),
            roff(&section.table_name())
        )?;
        for row in section.rows() {
            let keys = match row.keys {
                Defaults::Keys(list) => list.join(", "),
                Defaults::Main => "as on the main screen".to_owned(),
                Defaults::Any(shown) => shown.to_owned(),
            };
            writeln!(out, ".TP\n\\fB{}\\fR ({})", roff(&keys), roff(row.name))?;
            writeln!(out, "{}", roff(row.about))?;
        }
    }
    Ok(())
}

/// The variables luzia reads, and what each changes.
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "LUZIA_JOBS_DIR",
        "The jobs root, the directory that holds the job directories (before jobs_dir in the \
         config; \\-\\-jobs\\-dir comes first).",
    ),
    (
        "LUZIA_CONFIG",
        "The config file to read instead of the usual places (\\-\\-config comes first).",
    ),
    (
        "LUZIA_QUEUE_DIR",
        "Where tasks wait for a free slot (before queue_dir in the config).",
    ),
    (
        "LUZIA_NOTIFICATIONS_LOG",
        "The file each finished job appends its line to (before notifications_log in the config).",
    ),
    (
        "LUZIA_WATCH",
        "poll: watch job files by polling instead of inotify (for file systems whose events \
         cannot be trusted, such as NFS).",
    ),
    (
        "LUZIA_LOG",
        "The level of the cockpit's log file (error, warn, info, debug, trace; default info).",
    ),
    (
        "LUZIA_JOB_DIR, LUZIA_JOB_ID",
        "Set by luzia for each agent: its job directory and id (read by ask, gate, progress \
         and mcp). An agent keeps luzia's own variables from its environment (those above, \
         LUZIA_PROC and LUZIA_SSH), and no other LUZIA_ name.",
    ),
    (
        "TELEGRAM_BOT_TOKEN",
        "The Telegram bot's token, for the bridge luzia notify \\-\\-watch runs with a \
         [telegram] table (never read from the config file, never printed).",
    ),
    (
        "NO_COLOR",
        "When set and not empty, no colours in any output (https://no-color.org).",
    ),
    (
        "XDG_CONFIG_HOME",
        "The config is read from $XDG_CONFIG_HOME/luzia/config.toml (default ~/.config).",
    ),
    (
        "XDG_STATE_HOME",
        "The per-user state: the jobs root and queue when the system's do not exist, the \
         notification ledger, the cockpit's log (default ~/.local/state).",
    ),
    (
        "XDG_CACHE_HOME",
        "The index of settled jobs that makes a large root quick to list (default ~/.cache).",
    ),
    (
        "XDG_RUNTIME_DIR",
        "The sockets of the shared ssh connections to other hosts (else a private directory \
         under /tmp).",
    ),
    (
        "USER, LOGNAME",
        "The name answers, decisions and stops are signed with (user@host); when neither is \
         set, the name of the process's uid.",
    ),
    (
        "Agent credentials",
        "An agent's environment is an allowlist: besides HOME, USER, LOGNAME, PATH, SHELL, \
         LANG, TERM, TZ and LUZIA_*, each kind of agent passes the variables it needs to log \
         in and reach its service (for Claude Code its API key and base URL, its cloud \
         provider's variables, proxies and CA certificates), when they are set. Anything else stays behind unless the config's env_pass names \
         it.",
    ),
];

fn write_environment(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, ".SH ENVIRONMENT")?;
    for (name, text) in ENVIRONMENT {
        writeln!(out, ".TP\n\\fB{}\\fR\n{text}", roff(name))?;
    }
    Ok(())
}

fn write_files(out: &mut dyn Write) -> io::Result<()> {
    let files: &[(&str, String)] = &[
        (
            "$XDG_CONFIG_HOME/luzia/config.toml, /etc/luzia/config.toml",
            "The config: the first that exists is read (LUZIA_CONFIG or \\-\\-config names \
             another)."
                .to_owned(),
        ),
        (
            DEFAULT_JOBS_DIR,
            format!(
                "The jobs root: one directory a job, named by its id. Where it does not exist, \
                 and none is configured, each user has their own, {}.",
                roff("$XDG_STATE_HOME/luzia/jobs")
            ),
        ),
        (
            DEFAULT_QUEUE_DIR,
            "The queue: tasks waiting for a free slot, and those that failed to start (the \
             per-user jobs root keeps its queue beside it, under $XDG_STATE_HOME/luzia)."
                .to_owned(),
        ),
        (
            DEFAULT_NOTIFICATIONS_LOG,
            "The notifications log: a line for each job that ends.".to_owned(),
        ),
        (
            "$XDG_CACHE_HOME/luzia/index/",
            "The index of settled jobs, one file a jobs root: a cache, safe to delete.".to_owned(),
        ),
        (
            "$XDG_STATE_HOME/luzia/notify-sent.json, $XDG_STATE_HOME/luzia/telegram.json, \
             $XDG_STATE_HOME/luzia/cockpit.log",
            "The ledger of notifications sent (so none is sent twice), the Telegram bridge's \
             offset and posts (so none is posted or applied twice), and the cockpit's log."
                .to_owned(),
        ),
    ];
    writeln!(out, ".SH FILES")?;
    for (path, text) in files {
        writeln!(out, ".TP\n\\fI{}\\fR\n{text}", roff(path))?;
    }
    Ok(())
}

fn write_exit_status(out: &mut dyn Write) -> io::Result<()> {
    let statuses: &[(String, &str)] = &[
        ("0".into(), "Success (for \\fBgate\\fR: approved)."),
        (
            "1".into(),
            "An error: the message on stderr names what failed and what to do next (also: a \
             host that could not be reached with \\-\\-host or \\-\\-all\\-hosts; standard output \
             that cannot be written, such as a full disk). Standard output closed by its reader \
             (luzia jobs | head \\-1) is no error: the command ends quietly with 0.",
        ),
        (
            "2".into(),
            "A usage error: an unknown command or option, a missing argument, a value that does \
             not parse.",
        ),
        (
            ALERT_EXIT.to_string(),
            "\\fBstatus \\-\\-alerts\\fR found an alert; \\fBask\\fR timed out with no default \
             answer.",
        ),
        (
            EXIT_DENIED.to_string(),
            "\\fBgate\\fR: the operator denied the gate.",
        ),
        (
            "128 + N".into(),
            "Ended by signal N, as a shell reports it (143 for SIGTERM); \\fBrun \\-\\-fg\\fR \
             and \\fBattach\\fR end with the agent's own status.",
        ),
    ];
    debug_assert_eq!(ALERT_EXIT, EXIT_NO_ANSWER, "one line says both");
    writeln!(out, ".SH EXIT STATUS")?;
    for (code, text) in statuses {
        writeln!(out, ".TP\n\\fB{code}\\fR\n{text}")?;
    }
    Ok(())
}

/// `luzia's cockpit` → `Luzia's cockpit`.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Text as roff reads it (see [`super::install::roff_escape`]).
fn roff(text: &str) -> String {
    super::install::roff_escape(text)
}
