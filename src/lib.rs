//! luzia: a terminal cockpit and command line for fleets of background AI coding agents.
//!
//! The crate has three layers: [`jobs`] is the domain (the on-disk job-directory contract, no
//! terminal code), [`commands`] are the plain CLI subcommands built on it, and [`cli`] /
//! [`config`] turn the command line, environment and config file into one validated setting.
//! [`fleet`] reaches other hosts' luzia over OpenSSH.

// Output goes through writers whose errors are returned (`commands::stdout`) or through
// `say!`: the print macros panic when their stream cannot be written.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

/// A line on stderr, as `eprintln!` writes it, except that a stderr that cannot be written (a
/// full disk, a closed pipe) loses the line instead of panicking: what a command does, and its
/// exit code, do not depend on whether its remarks can be read.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

pub mod cli;
pub mod commands;
pub mod config;
pub mod demo;
pub mod dispatcher;
pub mod fleet;
pub mod jobs;
pub mod notifier;
pub mod tui;
pub mod watch;
pub mod xdg;
