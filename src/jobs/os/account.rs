//! The users of this machine as `/etc/passwd` and `/etc/group` list them, and running a
//! command as one of them (the way `sudo -u` would).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use rustix::fs::{Gid, Uid};

/// A user of this machine, as `/etc/passwd` and `/etc/group` have it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups (those of `/etc/group` that list the user), primary group first.
    pub groups: Vec<u32>,
    pub home: PathBuf,
    pub shell: String,
}

impl Account {
    /// `name` from `/etc/passwd` (and its groups from `/etc/group`); `None` when there is no
    /// such user.
    pub fn lookup(name: &str) -> Option<Account> {
        let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
        let group = std::fs::read_to_string("/etc/group").unwrap_or_default();
        Account::from_files(name, &passwd, &group)
    }

    /// The name `/etc/passwd` gives this process's user (its real uid): who is at the
    /// keyboard when the environment does not say (`$USER` unset under cron, `env -i`, some
    /// containers).
    pub fn current_name() -> Option<String> {
        let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
        name_of_uid(rustix::process::getuid().as_raw(), &passwd)
    }

    pub fn from_files(name: &str, passwd: &str, group: &str) -> Option<Account> {
        let mut account = passwd.lines().find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            if f.len() < 7 || f[0] != name || name.is_empty() {
                return None;
            }
            Some(Account {
                name: name.to_owned(),
                uid: f[2].parse().ok()?,
                gid: f[3].parse().ok()?,
                groups: Vec::new(),
                home: PathBuf::from(f[5]),
                shell: f[6].to_owned(),
            })
        })?;
        account.groups.push(account.gid);
        for l in group.lines() {
            let f: Vec<&str> = l.split(':').collect();
            if f.len() >= 4
                && f[3].split(',').any(|m| m == name)
                && let Ok(gid) = f[2].parse::<u32>()
                && !account.groups.contains(&gid)
            {
                account.groups.push(gid);
            }
        }
        Some(account)
    }

    /// Makes `cmd` run as the user: groups, then group, then user (after which nothing can be
    /// taken back). A parent-death signal, if one is set for the child, must be set after
    /// this: changing credentials clears it.
    #[allow(
        unsafe_code,
        reason = "pre_exec runs code between fork and exec, which only Rust's unsafe can express; the closure makes only async-signal-safe system calls"
    )]
    pub fn switch(&self, cmd: &mut std::process::Command) {
        let groups: Vec<Gid> = self.groups.iter().map(|&g| Gid::from_raw(g)).collect();
        let (uid, gid) = (self.uid(), Gid::from_raw(self.gid));
        // SAFETY: between fork and exec only three raw system calls are made, on memory
        // prepared before the fork; the child has one thread, so the per-thread calls apply to
        // the whole process.
        unsafe {
            cmd.pre_exec(move || {
                rustix::thread::set_thread_groups(&groups)?;
                rustix::thread::set_thread_gid(gid)?;
                rustix::thread::set_thread_uid(uid)?;
                Ok(())
            });
        }
    }

    pub fn uid(&self) -> Uid {
        Uid::from_raw(self.uid)
    }
}

/// The first user of `passwd` (the text of `/etc/passwd`) whose uid is `uid`.
pub fn name_of_uid(uid: u32, passwd: &str) -> Option<String> {
    passwd.lines().find_map(|l| {
        let mut fields = l.split(':');
        let name = fields.next().filter(|n| !n.is_empty())?;
        let found: u32 = fields.nth(1)?.parse().ok()?;
        (found == uid).then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_is_named_by_the_first_passwd_line_that_has_it() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      broken line\n\
                      :x:1000:1000::/:/bin/sh\n\
                      ana:x:1000:1000:Ana:/home/ana:/bin/zsh\n\
                      alias:x:1000:1000::/home/ana:/bin/zsh\n";
        assert_eq!(name_of_uid(0, passwd).as_deref(), Some("root"));
        assert_eq!(name_of_uid(1000, passwd).as_deref(), Some("ana"));
        assert_eq!(name_of_uid(4242, passwd), None);
    }

    #[test]
    fn this_process_has_a_name() {
        // Tests run as root here and in CI; whoever runs them has a line in /etc/passwd.
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
        let uid = rustix::process::getuid().as_raw();
        assert_eq!(Account::current_name(), name_of_uid(uid, &passwd));
        assert!(Account::current_name().is_some());
    }
}
