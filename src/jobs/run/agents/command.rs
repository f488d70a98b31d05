//! Any agent that is not one luzia knows: a plain command, run as configured. It declares no
//! variables: what it needs beyond the allowlist, the config's `env_pass` and `env` give it.

use super::Needs;

pub const NEEDS: Needs = Needs {
    passed: &[],
    credentials: &[],
};
