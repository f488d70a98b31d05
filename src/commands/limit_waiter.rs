//! `luzia __limit-waiter --queue DIR`: the waiter a supervisor leaves behind when the usage
//! limit stopped its job ([`waiter`](crate::dispatcher::waiter)). Not for people.

use anyhow::Result;

use crate::cli::LimitWaiterArgs;
use crate::config::Config;
use crate::dispatcher::{Dispatcher, waiter};

pub fn run(cfg: &Config, args: &LimitWaiterArgs) -> Result<u8> {
    // The queue its starter waits for, whatever the environment would make of it now.
    let cfg = Config {
        queue_dir: args.queue.clone(),
        ..cfg.clone()
    };
    waiter::run(&Dispatcher::new(&cfg)?, args.inherit_lock);
    Ok(0)
}
