//! Where a user's files go, by the XDG base directory specification: the variable when it holds
//! an absolute path (a relative one is ignored, as the specification says), else its default
//! under `$HOME`. The environment is passed in, so the config's tests can give a map.

use std::path::PathBuf;

/// Reads a variable from the environment.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<PathBuf>;

/// The process environment, as an [`Env`].
pub fn process_env(key: &str) -> Option<PathBuf> {
    std::env::var_os(key).map(PathBuf::from)
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
pub fn config_home(env: Env) -> Option<PathBuf> {
    base(env, "XDG_CONFIG_HOME", ".config")
}

/// `$XDG_STATE_HOME`, else `~/.local/state`.
pub fn state_home(env: Env) -> Option<PathBuf> {
    base(env, "XDG_STATE_HOME", ".local/state")
}

/// `$XDG_CACHE_HOME`, else `~/.cache`.
pub fn cache_home(env: Env) -> Option<PathBuf> {
    base(env, "XDG_CACHE_HOME", ".cache")
}

/// Makes `dir` and whatever of its parents is missing, each made private to this user (0700):
/// luzia's per-user state holds tasks and output nobody else should read.
pub fn make_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn base(env: Env, var: &str, under_home: &str) -> Option<PathBuf> {
    env(var)
        .filter(|p| p.is_absolute())
        .or_else(|| env("HOME").map(|h| h.join(under_home)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_variable_else_home_else_nothing() {
        let with = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| PathBuf::from(v))
            }
        };
        let both = with(&[
            ("XDG_STATE_HOME", "/s"),
            ("XDG_CONFIG_HOME", "/c"),
            ("HOME", "/h"),
        ]);
        assert_eq!(state_home(&both), Some(PathBuf::from("/s")));
        assert_eq!(config_home(&both), Some(PathBuf::from("/c")));
        let relative = with(&[
            ("XDG_STATE_HOME", "rel"),
            ("XDG_CONFIG_HOME", ""),
            ("HOME", "/h"),
        ]);
        assert_eq!(
            state_home(&relative),
            Some(PathBuf::from("/h/.local/state"))
        );
        assert_eq!(config_home(&relative), Some(PathBuf::from("/h/.config")));
        let nothing = with(&[]);
        assert_eq!(state_home(&nothing), None);
        assert_eq!(config_home(&nothing), None);
    }
}
