//! Completions that complete what is on disk: the bash script `luzia completions bash` prints
//! is clap's (the commands and options), followed by a function that asks `luzia __candidates`
//! for job ids (newest first), project names and host names where those go.
//!
//! The candidates command is quiet by design: a shell calls it on every Tab, so a broken
//! config or a missing jobs root gives no candidates, never an error in the middle of a line.

use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use clap::{ArgAction, Command};

use crate::cli::{CandidateKind, CandidatesArgs, Global};
use crate::config::{Config, LOCAL_HOST, Overrides};
use crate::jobs::model::scan::list_ids_where;

/// `luzia __candidates KIND [PREFIX]`: one candidate a line, those starting with PREFIX.
pub fn candidates(
    global: &Global,
    args: &CandidatesArgs,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let overrides = Overrides {
        config: global.config.clone(),
        jobs_dir: global.jobs_dir.clone(),
    };
    let Ok(cfg) = Config::load(&overrides) else {
        return Ok(0);
    };
    let prefix = args.prefix.as_str();
    let words: Vec<String> = match args.kind {
        CandidateKind::Jobs => newest_first(&cfg.jobs_dir, prefix),
        CandidateKind::Projects => cfg.projects.keys().cloned().collect(),
        CandidateKind::Hosts => std::iter::once(LOCAL_HOST.to_owned())
            .chain(cfg.hosts.keys().cloned())
            .collect(),
    };
    for word in words.iter().filter(|w| w.starts_with(prefix)) {
        writeln!(out, "{word}")?;
    }
    Ok(0)
}

/// More matches than this are not dated: a `stat` each would keep a Tab waiting most of a
/// second at 100,000 jobs, for a list nobody reads but narrows by typing.
const DATED_MAX: usize = 5_000;

/// The ids under `root` that start with `prefix`, the newest job first: by when its directory
/// was made (a `stat` each, no job's files read), or last changed where the file system does not
/// say when a file was made. Past [`DATED_MAX`] matches, by id, highest first.
fn newest_first(root: &Path, prefix: &str) -> Vec<String> {
    let Ok(mut ids) = list_ids_where(root, |name| name.starts_with(prefix)) else {
        return Vec::new();
    };
    if ids.len() > DATED_MAX {
        ids.sort_unstable_by(|a, b| b.cmp(a));
        return ids.iter().map(ToString::to_string).collect();
    }
    let mut dated: Vec<(Option<SystemTime>, String)> = ids
        .into_iter()
        .map(|id| (made(&root.join(id.as_str())), id.to_string()))
        .collect();
    dated.sort_by(|a, b| b.cmp(a));
    dated.into_iter().map(|(_, id)| id).collect()
}

fn made(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.created().or_else(|_| meta.modified()).ok()
}

/// The bash function that completes job ids, projects and hosts, then hands everything else
/// to clap's `_luzia`; written from the command line's definition, so a new command that takes
/// a job id completes one without a word here.
pub fn bash_dynamic(cli: &Command) -> String {
    let visible = || cli.get_subcommands().filter(|s| !s.is_hide_set());
    // What a command's first word is: a job id (`id`), or a project (`project`, or words
    // that may start with one, as `run`'s `[PROJECT] TASK`).
    let first_is = |sub: &Command, what: &str| {
        sub.get_positionals().next().is_some_and(|a| {
            a.get_id().as_str() == what
                || a.get_value_names().is_some_and(|names| {
                    names.first().is_some_and(|n| {
                        n.as_str()
                            .starts_with(&format!("[{}]", what.to_ascii_uppercase()))
                    })
                })
        })
    };
    let with_id: Vec<&str> = visible()
        .filter(|s| first_is(s, "id"))
        .map(Command::get_name)
        .collect();
    let with_project: Vec<&str> = visible()
        .filter(|s| first_is(s, "project"))
        .map(Command::get_name)
        .collect();
    let mut valued: Vec<String> = std::iter::once(cli)
        .chain(visible())
        .flat_map(Command::get_arguments)
        .filter(|a| {
            !a.is_positional() && matches!(a.get_action(), ArgAction::Set | ArgAction::Append)
        })
        .flat_map(|a| {
            let long = a.get_long().map(|l| format!("--{l}"));
            let short = a.get_short().map(|s| format!("-{s}"));
            long.into_iter().chain(short)
        })
        .collect();
    valued.sort();
    valued.dedup();
    // An arm with no command to match would be a syntax error: it is left out.
    let arm = |names: &[&str], kind: &str| {
        if names.is_empty() {
            String::new()
        } else {
            format!("            {}) kind={kind} ;;\n", names.join("|"))
        }
    };
    BASH_DYNAMIC
        .replace(
            "@ARMS@",
            &(arm(&with_id, "jobs") + &arm(&with_project, "projects")),
        )
        .replace("@VALUED@", &valued.join("|"))
}

/// `@...@` are filled in by [`bash_dynamic`].
const BASH_DYNAMIC: &str = r#"
# Job ids (newest first), projects and hosts, asked of luzia itself; the rest is clap's above.
_luzia_candidates() {
    local luzia="${COMP_WORDS[0]/#\~/$HOME}"
    "$luzia" "${_luzia_global[@]}" __candidates "$@" 2>/dev/null
}

_luzia_dynamic() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    local kind="" sub="" positionals=0 i word
    local -a _luzia_global=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        case "$word" in
            --jobs-dir|--config)
                _luzia_global+=("$word" "${COMP_WORDS[i+1]}")
                ((i++)) ;;
            @VALUED@) ((i++)) ;;
            -*) ;;
            *) if [[ -z $sub ]]; then sub="$word"; else ((positionals++)); fi ;;
        esac
    done
    case "$prev" in
        --host) kind=hosts ;;
        --project|-p) kind=projects ;;
    esac
    if [[ -z $kind && $cur != -* && $positionals -eq 0 ]]; then
        case "$sub" in
@ARMS@        esac
    fi
    if [[ -n $kind ]]; then
        local IFS=$'\n'
        COMPREPLY=($(_luzia_candidates "$kind" "$cur"))
        return 0
    fi
    _luzia "$@"
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _luzia_dynamic -o nosort -o bashdefault -o default luzia
else
    complete -F _luzia_dynamic -o bashdefault -o default luzia
fi
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn ids_come_newest_first_and_by_id_past_what_is_worth_dating() {
        let root = tempfile::tempdir().unwrap();
        for id in ["300000-c", "100000-a", "200000-b"] {
            std::fs::create_dir(root.path().join(id)).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(
            newest_first(root.path(), ""),
            ["200000-b", "100000-a", "300000-c"]
        );
        assert_eq!(newest_first(root.path(), "1"), ["100000-a"]);
        for n in 0..DATED_MAX {
            std::fs::create_dir(root.path().join(format!("9{n:06}"))).unwrap();
        }
        let many = newest_first(root.path(), "");
        assert_eq!(many.len(), DATED_MAX + 3);
        assert_eq!(many.first().map(String::as_str), Some("9004999"));
        assert_eq!(many.last().map(String::as_str), Some("100000-a"));
        assert!(newest_first(&root.path().join("gone"), "").is_empty());
    }

    #[test]
    fn the_script_knows_every_command_that_takes_a_job_id() {
        let script = bash_dynamic(&crate::cli::Cli::command());
        let with_id = script
            .lines()
            .find(|l| l.trim_start().starts_with("jobs|"))
            .expect("the commands that take an id");
        for sub in [
            "jobs", "logs", "answer", "approve", "deny", "kill", "retry", "reply", "attach",
            "diff", "merge", "discard",
        ] {
            assert!(
                with_id.contains(&format!("{sub}|")) || with_id.contains(&format!("|{sub})")),
                "{sub}: {with_id}"
            );
        }
        assert!(
            script.contains("            run) kind=projects ;;"),
            "{script}"
        );
        for blank in ["@ARMS@", "@VALUED@"] {
            assert!(!script.contains(blank), "{blank} filled in: {script}");
        }
    }
}
