//! luzia: a terminal cockpit and command line for fleets of background AI coding agents.
//!
//! The crate has three layers: [`jobs`] is the domain (the on-disk job-directory contract, no
//! terminal code), [`commands`] are the plain CLI subcommands built on it, and [`cli`] /
//! [`config`] turn the command line, environment and config file into one validated setting.
//! [`fleet`] reaches other hosts' luzia over OpenSSH.

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
