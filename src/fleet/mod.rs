//! Other machines' jobs over the system's OpenSSH, with no server of luzia's own: each host's
//! luzia speaks for its own jobs root (`luzia watch --json`, and every action as its own CLI
//! command), one shared ssh connection per host carrying all of it. `ssh` builds the command
//! line, `run` runs one command and says what went wrong, `link` keeps a host's watch alive.

pub mod args;
pub mod link;
pub mod run;
pub mod ssh;

pub use link::{Link, LinkEvent};
pub use run::{RemoteError, run};
