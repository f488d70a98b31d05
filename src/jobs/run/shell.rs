//! What an agent that works through a shell needs from its environment: luzia itself first on
//! its PATH (so `luzia ask`, `gate` and `progress` are found whatever the user's PATH), and
//! Claude Code's Bash tool allowed to wait as long as a question may. The Bash tool's default
//! timeout is two minutes, after which Claude Code moves the command to the background: a
//! `luzia ask` waiting for a person would lose its answer. The config's own values (`[agent.env]`,
//! a project's `env`, or `env_pass`) win over these.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;

/// The Bash tool's timeouts luzia sets: 24 days, the longest a Node.js timer can wait (2^31 - 1
/// ms) rounded down to whole days, since a question without `--timeout` waits for a person.
pub const BASH_TIMEOUT_MS: &str = "2073600000";
/// The Bash tool's timeout variables.
pub const BASH_TIMEOUTS: [&str; 2] = ["BASH_DEFAULT_TIMEOUT_MS", "BASH_MAX_TIMEOUT_MS"];
/// The PATH an agent is given when it was given none.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Puts `luzia_dir` first on the PATH of `env` and sets the Bash tool's timeouts where `env`
/// has none yet.
pub fn for_the_shell(env: &mut BTreeMap<OsString, OsString>, luzia_dir: Option<&Path>) {
    for name in BASH_TIMEOUTS {
        env.entry(name.into())
            .or_insert_with(|| BASH_TIMEOUT_MS.into());
    }
    let Some(dir) = luzia_dir else { return };
    let path = env
        .get(OsStr::new("PATH"))
        .cloned()
        .unwrap_or_else(|| FALLBACK_PATH.into());
    let already_first = std::env::split_paths(&path)
        .next()
        .is_some_and(|p| p == dir);
    if already_first {
        return;
    }
    let mut joined = dir.as_os_str().to_owned();
    if !path.is_empty() {
        joined.push(":");
        joined.push(&path);
    }
    env.insert("PATH".into(), joined);
}

/// The directory of the running luzia executable.
pub fn luzia_dir() -> Option<std::path::PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> BTreeMap<OsString, OsString> {
        vars.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    #[test]
    fn luzia_goes_first_on_the_path_and_the_bash_timeouts_cover_a_question() {
        let mut e = env(&[("PATH", "/usr/bin:/bin")]);
        for_the_shell(&mut e, Some(Path::new("/opt/luzia/bin")));
        assert_eq!(e[OsStr::new("PATH")], "/opt/luzia/bin:/usr/bin:/bin");
        for name in BASH_TIMEOUTS {
            assert_eq!(e[OsStr::new(name)], BASH_TIMEOUT_MS);
        }
        assert!(
            BASH_TIMEOUT_MS.parse::<u64>().unwrap() < (1 << 31),
            "a Node.js timer"
        );
        for_the_shell(&mut e, Some(Path::new("/opt/luzia/bin")));
        assert_eq!(
            e[OsStr::new("PATH")],
            "/opt/luzia/bin:/usr/bin:/bin",
            "once"
        );
    }

    #[test]
    fn the_config_s_timeouts_win_and_a_missing_path_gets_a_usual_one() {
        let mut e = env(&[("BASH_MAX_TIMEOUT_MS", "60000")]);
        for_the_shell(&mut e, Some(Path::new("/l")));
        assert_eq!(e[OsStr::new("BASH_MAX_TIMEOUT_MS")], "60000");
        assert_eq!(e[OsStr::new("BASH_DEFAULT_TIMEOUT_MS")], BASH_TIMEOUT_MS);
        assert_eq!(e[OsStr::new("PATH")], "/l:/usr/local/bin:/usr/bin:/bin");
        let mut none = env(&[("PATH", "/usr/bin")]);
        for_the_shell(&mut none, None);
        assert_eq!(none[OsStr::new("PATH")], "/usr/bin");
    }
}
