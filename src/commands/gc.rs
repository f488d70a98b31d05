//! `luzia gc`: finished jobs older than an age out of the jobs root (see
//! [`crate::jobs::run::gc`]).

use std::io::Write;

use anyhow::{Result, bail};
use chrono::Utc;

use crate::cli::GcArgs;
use crate::config::Config;
use crate::jobs::run::gc::{self, Disposal, Outcome, Plan};

pub fn run(cfg: &Config, args: &GcArgs, out: &mut dyn Write) -> Result<u8> {
    let root = super::jobs_root(cfg)?;
    let older_than = match gc::parse_age(&args.older_than) {
        Ok(age) => age,
        Err(e) => bail!("--older-than {e}"),
    };
    let how = if args.delete {
        Disposal::Delete
    } else {
        match args
            .archive_to
            .clone()
            .or_else(|| gc::default_archive(root))
        {
            Some(dir) => Disposal::Archive(dir),
            None => bail!(
                "the jobs root {} has no parent to put an archive beside: name one with \
                 --archive-to DIR, or --delete",
                root.display()
            ),
        }
    };
    let plan = Plan {
        older_than,
        how,
        dry_run: args.dry_run,
    };
    let outcome = gc::collect(root, &cfg.queue_dir, &plan, Utc::now())?;
    report(&plan, &args.older_than, &outcome, out)?;
    Ok(if outcome.failed.is_empty() { 0 } else { 1 })
}

fn report(plan: &Plan, age: &str, o: &Outcome, out: &mut dyn Write) -> Result<()> {
    let verb = match (&plan.how, plan.dry_run) {
        (Disposal::Archive(_), false) => "moved",
        (Disposal::Archive(_), true) => "would move",
        (Disposal::Delete, false) => "deleted",
        (Disposal::Delete, true) => "would delete",
    };
    let whither = match &plan.how {
        Disposal::Archive(dir) => format!(" to {}", dir.display()),
        Disposal::Delete => String::new(),
    };
    writeln!(
        out,
        "{verb} {} finished more than {} ago ({}){whither}",
        jobs(o.collected),
        age.trim(),
        bytes(o.bytes)
    )?;
    if o.worktrees + o.branches + o.refs > 0 {
        let verb = if plan.dry_run {
            "would remove"
        } else {
            "removed"
        };
        let freed = match (&plan.how, plan.dry_run) {
            (Disposal::Delete, false) => format!(" (freed {})", bytes(o.bytes)),
            (Disposal::Delete, true) => format!(" (would free {})", bytes(o.bytes)),
            (Disposal::Archive(_), false) => format!(" (freed {})", bytes(o.worktree_bytes)),
            (Disposal::Archive(_), true) => format!(" (would free {})", bytes(o.worktree_bytes)),
        };
        writeln!(
            out,
            "{verb} of their repositories: {} worktree{}, {} branch{}, {} ref{}{freed}",
            o.worktrees,
            if o.worktrees == 1 { "" } else { "s" },
            o.branches,
            if o.branches == 1 { "" } else { "es" },
            o.refs,
            if o.refs == 1 { "" } else { "s" },
        )?;
    }
    let kept: Vec<String> = o
        .kept
        .iter()
        .map(|(why, n)| format!("{n} {}", why.describe()))
        .collect();
    if !kept.is_empty() {
        writeln!(out, "kept: {}", kept.join(", "))?;
    }
    for (id, why) in &o.failed {
        crate::say!("luzia: job {id} stays: {why}");
    }
    Ok(())
}

fn jobs(n: usize) -> String {
    if n == 1 {
        "1 job".into()
    } else {
        format!("{n} jobs")
    }
}

/// Bytes as a person reads them: `0 B`, `512 B`, `4.0 KiB`, `1.2 GiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.1} {unit}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_as_a_person_says_them() {
        assert_eq!(super::bytes(0), "0 B");
        assert_eq!(super::bytes(1023), "1023 B");
        assert_eq!(super::bytes(4096), "4.0 KiB");
        assert_eq!(super::bytes(3 * 1024 * 1024 * 1024 / 2), "1.5 GiB");
    }
}
