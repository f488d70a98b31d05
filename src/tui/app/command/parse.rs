//! What a line typed after `:` asks for, and how Tab completes it: pure functions over the
//! text (and the names it may complete to), tested as tables.

use crate::tui::app::table::view::{SortKey, Tab};

/// A command of the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Quit,
    /// Dispatch this task (to the project the input bar would pick).
    Run(String),
    /// Filter by this project; `None` clears the project filter.
    Project(Option<String>),
    Sort(SortKey),
    View(Tab),
    Help,
}

/// The commands' names, in the order they are offered. `q` and `q!` are `quit` too.
pub const NAMES: [&str; 6] = ["quit", "run", "project", "sort", "view", "help"];

pub const SORT_KEYS: [SortKey; 4] = [
    SortKey::Status,
    SortKey::Started,
    SortKey::Project,
    SortKey::Elapsed,
];

/// The command `line` asks for, or what is wrong with it (said in the line).
pub fn parse(line: &str) -> Result<Command, String> {
    let (name, arg) = split(line);
    let no_arg = |command: Command| match arg {
        "" => Ok(command),
        _ => Err(format!("{name} takes no argument")),
    };
    match name {
        "" => Err(format!("type a command: {}", NAMES.join(", "))),
        "q" | "q!" | "quit" => no_arg(Command::Quit),
        "help" => no_arg(Command::Help),
        "run" if arg.is_empty() => Err("run what? :run TASK".into()),
        "run" => Ok(Command::Run(arg.to_owned())),
        "project" => Ok(Command::Project((!arg.is_empty()).then(|| arg.to_owned()))),
        "sort" => sort_key(arg)
            .map(Command::Sort)
            .ok_or_else(|| format!("no sort '{arg}': {}", sort_names().join(", "))),
        "view" => view(arg)
            .map(Command::View)
            .ok_or_else(|| format!("no view '{arg}': {}", view_names().join(", "))),
        other => Err(format!(
            "unknown command '{other}' (commands: {})",
            NAMES.join(", ")
        )),
    }
}

/// The command's name and its argument, both trimmed.
fn split(line: &str) -> (&str, &str) {
    let line = line.trim();
    match line.split_once(char::is_whitespace) {
        Some((name, arg)) => (name, arg.trim()),
        None => (line, ""),
    }
}

fn sort_key(name: &str) -> Option<SortKey> {
    SORT_KEYS
        .into_iter()
        .find(|k| k.title().eq_ignore_ascii_case(name))
}

fn view(name: &str) -> Option<Tab> {
    Tab::ALL
        .into_iter()
        .find(|t| t.title().eq_ignore_ascii_case(name))
}

fn sort_names() -> Vec<String> {
    SORT_KEYS.iter().map(|k| k.title().to_owned()).collect()
}

fn view_names() -> Vec<String> {
    Tab::ALL.iter().map(|t| t.title().to_lowercase()).collect()
}

/// What Tab made of the line: the new text, and the names it could still be when it is not
/// one yet (shown in the line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completed {
    pub text: String,
    pub choices: Vec<String>,
}

/// Completes the command's name, or its argument: `projects` for `project`, the sort keys for
/// `sort`, the views for `view`. One candidate is written out (a name that takes an argument
/// gets its space); several go as far as they agree, and are listed.
pub fn complete(line: &str, projects: &[String]) -> Completed {
    let start = line.trim_start();
    let Some((name, arg)) = start.split_once(char::is_whitespace) else {
        let names: Vec<String> = NAMES.iter().map(|n| (*n).to_owned()).collect();
        let takes_arg = |n: &str| !matches!(n, "quit" | "help");
        return completed(start, &names, "", |n| if takes_arg(n) { " " } else { "" });
    };
    let candidates = match name {
        "project" => projects.to_vec(),
        "sort" => sort_names(),
        "view" => view_names(),
        _ => Vec::new(),
    };
    completed(arg.trim_start(), &candidates, &format!("{name} "), |_| "")
}

/// `typed` completed among `candidates` (those it begins), after `before`; `after` is what
/// follows a name written out whole.
fn completed(
    typed: &str,
    candidates: &[String],
    before: &str,
    after: impl Fn(&str) -> &'static str,
) -> Completed {
    let fits: Vec<&String> = candidates.iter().filter(|c| c.starts_with(typed)).collect();
    match fits.as_slice() {
        [] => Completed {
            text: format!("{before}{typed}"),
            choices: Vec::new(),
        },
        [one] => Completed {
            text: format!("{before}{one}{}", after(one)),
            choices: Vec::new(),
        },
        many => Completed {
            text: format!("{before}{}", common_prefix(many)),
            choices: many.iter().map(|c| (*c).clone()).collect(),
        },
    }
}

fn common_prefix(names: &[&String]) -> String {
    let Some(first) = names.first() else {
        return String::new();
    };
    let mut len = first.len();
    for name in &names[1..] {
        len = first
            .char_indices()
            .zip(name.chars())
            .take_while(|((_, a), b)| a == b)
            .map(|((i, a), _)| i + a.len_utf8())
            .last()
            .unwrap_or(0)
            .min(len);
    }
    first[..len].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_what_they_ask_for() {
        let table: &[(&str, Result<Command, &str>)] = &[
            ("q", Ok(Command::Quit)),
            ("q!", Ok(Command::Quit)),
            (" quit ", Ok(Command::Quit)),
            ("help", Ok(Command::Help)),
            (
                "run fix the build",
                Ok(Command::Run("fix the build".into())),
            ),
            ("run   two  spaces ", Ok(Command::Run("two  spaces".into()))),
            (
                "project musica",
                Ok(Command::Project(Some("musica".into()))),
            ),
            ("project", Ok(Command::Project(None))),
            ("sort newest", Ok(Command::Sort(SortKey::Started))),
            ("sort Longest", Ok(Command::Sort(SortKey::Elapsed))),
            ("view failed", Ok(Command::View(Tab::Failed))),
            ("view All", Ok(Command::View(Tab::All))),
            (
                "",
                Err("type a command: quit, run, project, sort, view, help"),
            ),
            ("run", Err("run what? :run TASK")),
            ("q now", Err("q takes no argument")),
            ("help me", Err("help takes no argument")),
            (
                "sort size",
                Err("no sort 'size': status, newest, project, longest"),
            ),
            (
                "view",
                Err("no view '': all, active, waiting, done, failed"),
            ),
            (
                "wq",
                Err("unknown command 'wq' (commands: quit, run, project, sort, view, help)"),
            ),
            (
                "Q",
                Err("unknown command 'Q' (commands: quit, run, project, sort, view, help)"),
            ),
        ];
        for (line, want) in table {
            let want = want.clone().map_err(str::to_owned);
            assert_eq!(parse(line), want, "{line:?}");
        }
    }

    #[test]
    fn tab_completes_names_and_arguments() {
        let projects = [
            "librec".to_owned(),
            "musica".to_owned(),
            "music-2".to_owned(),
        ];
        let table: &[(&str, &str, &[&str])] = &[
            // (typed, completed to, choices listed)
            ("", "", &["quit", "run", "project", "sort", "view", "help"]),
            ("q", "quit", &[]),
            ("r", "run ", &[]),
            ("pro", "project ", &[]),
            ("h", "help", &[]),
            ("x", "x", &[]),
            ("project ", "project ", &["librec", "musica", "music-2"]),
            ("project m", "project music", &["musica", "music-2"]),
            ("project l", "project librec", &[]),
            ("sort n", "sort newest", &[]),
            (
                "sort ",
                "sort ",
                &["status", "newest", "project", "longest"],
            ),
            ("view f", "view failed", &[]),
            ("view a", "view a", &["all", "active"]),
            ("view z", "view z", &[]),
            ("run fi", "run fi", &[]),
        ];
        for (typed, text, choices) in table {
            let got = complete(typed, &projects);
            assert_eq!(got.text, *text, "{typed:?}");
            assert_eq!(got.choices, *choices, "{typed:?}");
        }
    }
}
