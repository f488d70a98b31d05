//! A Claude Code job's session, on its command line. luzia fixes each Claude job's session id
//! when it dispatches it (`--session-id <uuid>`), so the session can be continued later: `luzia
//! reply` and a resuming `luzia retry` start a job with `--resume <id>` instead, and `luzia run
//! --fg` / `luzia attach` run Claude Code interactively (no print mode; the task, if any, as the
//! initial prompt argument). Any other agent's command line is left exactly as configured.

use serde_json::{Value, json};

pub use crate::jobs::run::agents::claude::is_claude;

/// A session to continue, and the job whose session it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resume {
    pub session_id: String,
    /// The job continued (meta.json `resumes` of the new job).
    pub job: String,
}

/// What a job does with its Claude Code session. The default: a fresh session, in print mode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionPlan {
    /// Continue this session instead of starting one.
    pub resume: Option<Resume>,
    /// Run in the operator's terminal: no print mode, stdin and stdout the terminal's.
    pub interactive: bool,
    /// The initial prompt, as the last argument (interactive only; the prompt reaches a job in
    /// print mode on stdin).
    pub prompt_arg: Option<String>,
}

/// Flags of Claude Code that say which session to run; luzia's own replace them.
const SESSION_FLAGS: [&str; 6] = [
    "--session-id",
    "--resume",
    "-r",
    "--continue",
    "-c",
    "--fork-session",
];
/// Flags of print mode, dropped for an interactive run.
const PRINT_FLAGS: [&str; 7] = [
    "-p",
    "--print",
    "--output-format",
    "--input-format",
    "--include-partial-messages",
    "--permission-prompt-tool",
    "--replay-user-messages",
];
/// Of the flags above, those followed by a value (unless written `--flag=value`).
const TAKES_VALUE: [&str; 6] = [
    "--session-id",
    "--resume",
    "-r",
    "--output-format",
    "--input-format",
    "--permission-prompt-tool",
];

/// `argv` with the session's flags (and, interactive, without print mode), and the session id
/// the job will run. For an agent that is not Claude Code: `argv` unchanged and no session.
pub fn claude_command(argv: Vec<String>, plan: &SessionPlan) -> (Vec<String>, Option<String>) {
    let Some(program) = argv.first().filter(|p| is_claude(p)).cloned() else {
        return (argv, None);
    };
    let mut dropped: Vec<&str> = SESSION_FLAGS.to_vec();
    if plan.interactive {
        dropped.extend(PRINT_FLAGS);
    }
    let session_id = match &plan.resume {
        Some(r) => r.session_id.clone(),
        None => new_session_id(),
    };
    let flag = if plan.resume.is_some() {
        "--resume"
    } else {
        "--session-id"
    };
    let mut out = vec![program, flag.to_owned(), session_id.clone()];
    out.extend(without(&argv[1..], &dropped));
    if plan.interactive
        && let Some(prompt) = &plan.prompt_arg
    {
        // After `--`, a prompt that begins with `-` is not taken for a flag.
        out.push("--".to_owned());
        out.push(prompt.clone());
    }
    (out, Some(session_id))
}

/// `args` less the flags named in `dropped` (and the value after those that take one).
fn without(args: &[String], dropped: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.iter().peekable();
    while let Some(arg) = it.next() {
        let name = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
        if !dropped.contains(&name) {
            out.push(arg.clone());
            continue;
        }
        let inline = arg.contains('=');
        // `--resume` may stand alone (a picker); a value never begins with `-`.
        if !inline
            && TAKES_VALUE.contains(&name)
            && it.peek().is_some_and(|next| !next.starts_with('-'))
        {
            it.next();
        }
    }
    out
}

/// A random (version 4) UUID, as Claude Code's `--session-id` wants it.
pub fn new_session_id() -> String {
    let mut hex: Vec<char> = crate::jobs::hitl::published::new_token().chars().collect();
    hex.resize(32, '0');
    hex[12] = '4';
    // The variant: the two high bits of the 17th digit are 10.
    let variant = hex[16].to_digit(16).unwrap_or(0);
    hex[16] = char::from_digit(8 | (variant & 3), 16).unwrap_or('8');
    let s: String = hex.into_iter().collect();
    format!(
        "{}-{}-{}-{}-{}",
        &s[0..8],
        &s[8..12],
        &s[12..16],
        &s[16..20],
        &s[20..32]
    )
}

/// What meta.json says of the session: `session_id`, `resumes` and, for a job run in a
/// terminal, `foreground`.
pub fn record(meta: &mut Value, plan: &SessionPlan, session_id: Option<&str>) {
    if let Some(id) = session_id {
        meta["session_id"] = json!(id);
    }
    if let Some(r) = &plan.resume {
        meta["resumes"] = json!(r.job);
    }
    if plan.interactive {
        meta["foreground"] = json!(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    const DEFAULT: [&str; 9] = [
        "claude",
        "--permission-mode",
        "default",
        "--add-dir",
        "/srv/p",
        "--print",
        "--output-format",
        "stream-json",
        "-p",
    ];

    #[test]
    fn a_claude_job_gets_a_fresh_session_id_first() {
        let (argv, id) = claude_command(args(&DEFAULT), &SessionPlan::default());
        let id = id.unwrap();
        assert_eq!(argv[..3], args(&["claude", "--session-id", &id]));
        assert_eq!(argv[3..], args(&DEFAULT[1..]));
        let (_, other) = claude_command(args(&DEFAULT), &SessionPlan::default());
        assert_ne!(other.unwrap(), id, "a new one every job");
    }

    #[test]
    fn session_ids_are_version_4_uuids() {
        let re = regex::Regex::new(
            r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        )
        .unwrap();
        for _ in 0..200 {
            let id = new_session_id();
            assert!(re.is_match(&id), "{id}");
        }
    }

    #[test]
    fn a_resume_replaces_whatever_session_the_command_named() {
        let plan = SessionPlan {
            resume: Some(Resume {
                session_id: "s-1".into(),
                job: "j1".into(),
            }),
            ..SessionPlan::default()
        };
        let configured = args(&[
            "/opt/bin/claude",
            "--session-id",
            "fixed",
            "--continue",
            "--resume=x",
            "-p",
        ]);
        let (argv, id) = claude_command(configured, &plan);
        assert_eq!(id.as_deref(), Some("s-1"));
        assert_eq!(argv, args(&["/opt/bin/claude", "--resume", "s-1", "-p"]));
    }

    #[test]
    fn interactive_drops_print_mode_and_takes_the_prompt_as_its_last_argument() {
        let plan = SessionPlan {
            interactive: true,
            prompt_arg: Some("-fix the tests".into()),
            ..SessionPlan::default()
        };
        let mut configured = args(&DEFAULT);
        configured.extend(args(&[
            "--permission-prompt-tool",
            "mcp__luzia__permission",
            "--verbose",
        ]));
        let (argv, id) = claude_command(configured, &plan);
        let id = id.unwrap();
        assert_eq!(
            argv,
            args(&[
                "claude",
                "--session-id",
                &id,
                "--permission-mode",
                "default",
                "--add-dir",
                "/srv/p",
                "--verbose",
                "--",
                "-fix the tests"
            ])
        );
    }

    #[test]
    fn another_agent_is_left_alone() {
        for program in ["codex", "/usr/bin/claude-wrapper", "cat", "claude.sh"] {
            let argv = args(&[program, "--session-id", "x", "-p"]);
            let plan = SessionPlan {
                interactive: true,
                ..SessionPlan::default()
            };
            assert_eq!(
                claude_command(argv.clone(), &plan),
                (argv, None),
                "{program}"
            );
        }
        assert!(is_claude("claude") && is_claude("/opt/claude-code/node_modules/.bin/claude"));
    }

    #[test]
    fn meta_json_says_the_session_the_job_it_resumes_and_the_foreground() {
        let mut meta = json!({"id": "j2"});
        let plan = SessionPlan {
            resume: Some(Resume {
                session_id: "s".into(),
                job: "j1".into(),
            }),
            interactive: true,
            prompt_arg: None,
        };
        record(&mut meta, &plan, Some("s"));
        assert_eq!(
            meta,
            json!({"id": "j2", "session_id": "s", "resumes": "j1", "foreground": true})
        );
        let mut plain = json!({});
        record(&mut plain, &SessionPlan::default(), None);
        assert_eq!(plain, json!({}));
    }
}
