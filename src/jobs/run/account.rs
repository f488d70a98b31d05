//! Who an agent runs as, and with what environment, the way `sudo -u` would: with a project's
//! `user` set and luzia running as root, the agent gets that user's uid, primary and
//! supplementary groups, HOME, USER, LOGNAME and SHELL, and its job directory becomes the
//! user's (group and mode kept, so whoever could write there before still can). Whether the
//! user is switched or not, the agent's environment is a clean allowlist: nothing of the
//! dispatcher's environment reaches it unless named here, declared by its kind of agent
//! (`agents`), or named in the config.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::jobs::fs::files::{self, open_write};
use crate::jobs::fs::names::HISTORY_FILE;
use crate::jobs::run::agents::Kind;

/// The variables an agent always keeps from the environment luzia runs in (besides
/// [`OWN_VARIABLES`]): what a login gives a program, and no more.
pub const ALWAYS_PASSED: [&str; 8] = [
    "HOME", "USER", "LOGNAME", "PATH", "SHELL", "LANG", "TERM", "TZ",
];

/// luzia's own variables, every one the code reads or sets (tests/architecture.rs keeps the
/// list true): the only `LUZIA_*` an agent keeps, for the `luzia` it runs itself (`ask`, `gate`,
/// `progress`, a `luzia run` of its own) to work as the dispatcher's does. Any other name that
/// starts with `LUZIA_` is not luzia's and stays behind like any variable: a prefix is no
/// allowlist (a secret named `LUZIA_`-something would reach every agent).
pub const OWN_VARIABLES: [&str; 12] = [
    "LUZIA_CONFIG",
    "LUZIA_JOBS_DIR",
    "LUZIA_QUEUE_DIR",
    "LUZIA_NOTIFICATIONS_LOG",
    "LUZIA_WATCH",
    "LUZIA_LOG",
    "LUZIA_PROC",
    "LUZIA_SSH",
    "LUZIA_JOB_DIR",
    "LUZIA_JOB_ID",
    "LUZIA_PORT",
    "LUZIA_PORT_COUNT",
];

/// What the config adds to an agent's environment (`env_pass` and `env`, of `[agent]` and of
/// the project).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentEnv {
    /// Names passed through from luzia's environment, when set there.
    pub pass: Vec<String>,
    /// Values set, over anything passed through.
    pub set: BTreeMap<String, String>,
}

pub use crate::jobs::os::account::Account;

impl Account {
    /// Gives the job directory to the user: it becomes its owner (its group and mode stay, so
    /// the operators who could write there still can, and root always can), and
    /// `history.jsonl`, which the agent appends to and an operator's tool might create first,
    /// is made the user's too. The agent then writes its progress, questions and gates (and
    /// their temporary files) there like any file of its own.
    pub fn take_dir(&self, dir: &Path) -> std::io::Result<()> {
        let history = open_write(
            &dir.join(HISTORY_FILE),
            files::Write::Append { create: true },
            0o644,
        )?;
        rustix::fs::fchown(&history, Some(self.uid()), None)?;
        rustix::fs::chown(dir, Some(self.uid()), None)?;
        Ok(())
    }
}

/// The agent's whole environment: from `parent` (luzia's own) only [`ALWAYS_PASSED`],
/// [`OWN_VARIABLES`], the variables its kind of agent declares (`agents`: for Claude Code its
/// credentials, proxy and CA, when set) and the names `rules` passes; then, for a switched
/// user, its HOME, USER, LOGNAME and SHELL; then the values `rules` sets; then `LUZIA_JOB_DIR`
/// and `LUZIA_JOB_ID`, which nothing overrides.
pub fn agent_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    rules: &AgentEnv,
    kind: Kind,
    account: Option<&Account>,
    job: (&Path, &str),
) -> BTreeMap<OsString, OsString> {
    let as_root = match account {
        Some(a) => a.uid == 0,
        None => rustix::process::geteuid().is_root(),
    };
    environment(parent, rules, kind, account, as_root, job)
}

/// [`agent_env`], told whether the agent runs as root.
fn environment(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    rules: &AgentEnv,
    kind: Kind,
    account: Option<&Account>,
    as_root: bool,
    job: (&Path, &str),
) -> BTreeMap<OsString, OsString> {
    let parent: Vec<(OsString, OsString)> = parent.into_iter().collect();
    // A variable counts as set when luzia has it or the config sets it (a cloud switched on
    // in `[agent] env` brings that cloud's credentials along).
    let is_set = |name: &str| {
        rules.set.contains_key(name) || parent.iter().any(|(k, _)| k.as_bytes() == name.as_bytes())
    };
    let needs = kind.needs();
    let kept = |name: &OsString| {
        let b = name.as_bytes();
        OWN_VARIABLES.iter().any(|k| k.as_bytes() == b)
            || ALWAYS_PASSED.iter().any(|k| k.as_bytes() == b)
            || rules.pass.iter().any(|k| k.as_bytes() == b)
            || needs.passes(name, &is_set, as_root)
    };
    let mut env: BTreeMap<OsString, OsString> =
        parent.iter().filter(|(k, _)| kept(k)).cloned().collect();
    if let Some(a) = account {
        env.insert("HOME".into(), a.home.clone().into_os_string());
        env.insert("USER".into(), a.name.clone().into());
        env.insert("LOGNAME".into(), a.name.clone().into());
        if !a.shell.is_empty() {
            env.insert("SHELL".into(), a.shell.clone().into());
        }
    }
    for (k, v) in &rules.set {
        env.insert(k.into(), v.into());
    }
    env.insert("LUZIA_JOB_DIR".into(), job.0.as_os_str().to_owned());
    env.insert("LUZIA_JOB_ID".into(), job.1.into());
    env
}

/// Whether `name` can be an environment variable's name in the config: a letter or `_`, then
/// letters, digits and `_`.
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\n\
        musica:x:1001:1001:Musica:/srv/musica:/bin/sh\n\
        broken:x:notanumber:1:b:/x:/bin/sh\n\
        short:x:5:5\n";
    const GROUP: &str = "root:x:0:\nmusica:x:1001:\ndocker:x:998:bruno,musica\n\
        audio:x:29:musical\nbad:x:nan:musica\n";

    #[test]
    fn accounts_come_from_passwd_with_their_groups() {
        let a = Account::from_files("musica", PASSWD, GROUP).unwrap();
        assert_eq!(
            a,
            Account {
                name: "musica".into(),
                uid: 1001,
                gid: 1001,
                groups: vec![1001, 998],
                home: "/srv/musica".into(),
                shell: "/bin/sh".into(),
            }
        );
        for missing in ["nobody", "broken", "short", "", "musica:x"] {
            assert_eq!(
                Account::from_files(missing, PASSWD, GROUP),
                None,
                "{missing}"
            );
        }
    }

    fn parent(vars: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        vars.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    fn shown(env: &BTreeMap<OsString, OsString>) -> Vec<String> {
        env.iter()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
            .collect()
    }

    #[test]
    fn the_environment_is_an_allowlist_whether_or_not_the_user_is_switched() {
        let from = parent(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("USER", "root"),
            ("TERM", "xterm"),
            ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("MY_SECRET_TOKEN", "hunter2"),
            ("ANTHROPIC_API_KEY", "sk-1"),
            ("GIT_SSH", "/bin/ssh"),
            ("LUZIA_QUEUE_DIR", "/q"),
            ("LUZIA_JOB_ID", "from-the-dispatcher"),
            // Named like luzia's own, but not one: a prefix lets nothing through.
            ("LUZIA_SECRET_TOKEN", "hunter3"),
            ("LD_PRELOAD", "/evil.so"),
        ]);
        let rules = AgentEnv {
            pass: vec!["GIT_SSH".into(), "NOT_SET".into()],
            set: [
                ("MODE".to_string(), "ci".to_string()),
                ("TERM".into(), "dumb".into()),
            ]
            .into(),
        };
        let job = (Path::new("/jobs/j1"), "j1");
        let plain = environment(from.clone(), &rules, Kind::Command, None, false, job);
        assert_eq!(
            shown(&plain),
            [
                "GIT_SSH=/bin/ssh",
                "HOME=/root",
                "LUZIA_JOB_DIR=/jobs/j1",
                "LUZIA_JOB_ID=j1",
                "LUZIA_QUEUE_DIR=/q",
                "MODE=ci",
                "PATH=/usr/bin",
                "TERM=dumb",
                "USER=root",
            ]
        );
        let musica = Account::from_files("musica", PASSWD, GROUP).unwrap();
        let switched = environment(
            from,
            &AgentEnv::default(),
            Kind::Command,
            Some(&musica),
            false,
            job,
        );
        assert_eq!(
            shown(&switched),
            [
                "HOME=/srv/musica",
                "LOGNAME=musica",
                "LUZIA_JOB_DIR=/jobs/j1",
                "LUZIA_JOB_ID=j1",
                "LUZIA_QUEUE_DIR=/q",
                "PATH=/usr/bin",
                "SHELL=/bin/sh",
                "TERM=xterm",
                "USER=musica",
            ]
        );
    }

    /// Claude Code receives what it declares, set in luzia's environment, and nothing else:
    /// as root and as a switched user alike (but IS_SANDBOX only as root).
    #[test]
    fn claude_code_receives_its_credentials_by_default_and_no_other_secret() {
        let from = parent(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("ANTHROPIC_API_KEY", "sk-1"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
            ("CLAUDE_CODE_USE_BEDROCK", "1"),
            ("AWS_REGION", "eu-west-1"),
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("NODE_EXTRA_CA_CERTS", "/etc/ca.pem"),
            ("IS_SANDBOX", "1"),
            ("MY_SECRET_TOKEN", "hunter2"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
        ]);
        let job = (Path::new("/jobs/j1"), "j1");
        let none = AgentEnv::default();
        let as_root = environment(from.clone(), &none, Kind::ClaudeCode, None, true, job);
        assert_eq!(
            shown(&as_root),
            [
                "ANTHROPIC_API_KEY=sk-1",
                "ANTHROPIC_BASE_URL=http://127.0.0.1:9",
                "AWS_REGION=eu-west-1",
                "CLAUDE_CODE_USE_BEDROCK=1",
                "HOME=/root",
                "HTTPS_PROXY=http://proxy:3128",
                "IS_SANDBOX=1",
                "LUZIA_JOB_DIR=/jobs/j1",
                "LUZIA_JOB_ID=j1",
                "NODE_EXTRA_CA_CERTS=/etc/ca.pem",
                "PATH=/usr/bin",
            ]
        );
        let musica = Account::from_files("musica", PASSWD, GROUP).unwrap();
        let switched = environment(
            from.clone(),
            &none,
            Kind::ClaudeCode,
            Some(&musica),
            false,
            job,
        );
        let names: Vec<&OsString> = switched.keys().collect();
        assert!(names.contains(&&OsString::from("ANTHROPIC_API_KEY")));
        assert!(names.contains(&&OsString::from("AWS_REGION")));
        assert!(!names.contains(&&OsString::from("IS_SANDBOX")));
        assert!(!names.contains(&&OsString::from("MY_SECRET_TOKEN")));
        // The same command as a plain one: none of Claude Code's variables.
        let plain = environment(from, &none, Kind::Command, None, true, job);
        assert!(
            plain
                .keys()
                .all(|k| !k.to_string_lossy().starts_with("ANTHROPIC"))
        );
        // A cloud switched on by the config brings its credentials along.
        let vertex = AgentEnv {
            pass: Vec::new(),
            set: [("CLAUDE_CODE_USE_VERTEX".to_string(), "1".to_string())].into(),
        };
        let from = parent(&[
            ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json"),
            ("AWS_REGION", "x"),
        ]);
        let env = environment(from, &vertex, Kind::ClaudeCode, None, false, job);
        assert!(env.contains_key(&OsString::from("GOOGLE_APPLICATION_CREDENTIALS")));
        assert!(!env.contains_key(&OsString::from("AWS_REGION")));
    }

    #[test]
    fn agent_env_asks_who_the_agent_runs_as() {
        let from = parent(&[("IS_SANDBOX", "1")]);
        let job = (Path::new("/jobs/j1"), "j1");
        let musica = Account::from_files("musica", PASSWD, GROUP).unwrap();
        let root = Account::from_files("root", PASSWD, GROUP).unwrap();
        let none = AgentEnv::default();
        let sandbox =
            |env: BTreeMap<OsString, OsString>| env.contains_key(&OsString::from("IS_SANDBOX"));
        assert!(!sandbox(agent_env(
            from.clone(),
            &none,
            Kind::ClaudeCode,
            Some(&musica),
            job
        )));
        assert!(sandbox(agent_env(
            from.clone(),
            &none,
            Kind::ClaudeCode,
            Some(&root),
            job
        )));
        assert_eq!(
            sandbox(agent_env(from, &none, Kind::ClaudeCode, None, job)),
            rustix::process::geteuid().is_root()
        );
    }

    #[test]
    fn env_names() {
        for ok in ["PATH", "_X", "a1_B"] {
            assert!(is_env_name(ok), "{ok}");
        }
        for bad in ["", "1A", "A-B", "A=B", "A B", "É"] {
            assert!(!is_env_name(bad), "{bad}");
        }
    }
}
