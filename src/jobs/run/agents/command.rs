//! Any agent that is not one luzia knows: a plain command, run as configured. It declares no
//! variables: what it needs beyond the allowlist, the config's `env_pass` and `env` give it.

use super::{Needs, Profile};

pub const PROFILE: Profile = Profile {
    short: "command",
    name: "a plain command",
    programs: &[],
    needs: Needs {
        network: false,
        passed: &[],
        credentials: &[],
    },
    install: "install it, or name its full path in [agent] command",
    login_help: "give it what it needs with [agent] env_pass or env",
    login_file: super::no_login_file,
    acp: None,
};
