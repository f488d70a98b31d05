//! The demo's job with a change to review: a small git project (`projects/webshop`) and one
//! finished job whose before and after snapshots are real commits under `refs/luzia/`, made
//! with the same code the supervisor uses, so that `d` in the cockpit (and `luzia diff`) opens a
//! real diff. Without git the demo simply has no such job.

use std::fs;
use std::path::Path;

use anyhow::Result;
use chrono::{Duration, Utc};
use serde_json::json;

use crate::jobs::model::review::{Isolation, Review};
use crate::jobs::review::git::Git;
use crate::jobs::review::{record, snapshot};

pub const ID: &str = "091500-diff";

const CART: &str = "def total(items):\n    return sum(i.price for i in items)\n\n\
                    def count(items):\n    return len(items)\n";
const CART_AFTER: &str = "def total(items, discount=0):\n    \
                          gross = sum(i.price * i.quantity for i in items)\n    \
                          return gross * (1 - discount)\n\n\
                          def count(items):\n    return sum(i.quantity for i in items)\n";

/// Makes the project and the job; `Ok(false)` when git is not there to make them with.
pub fn write(base: &Path, jobs: &Path) -> Result<bool> {
    let repo = base.join("projects").join("webshop");
    fs::create_dir_all(&repo)?;
    let git = Git::new(&repo, None);
    if matches!(
        git.output(["--version"]),
        Err(crate::jobs::review::ReviewError::NoGit)
    ) {
        return Ok(false);
    }
    let review = edit(&repo, &git)?;
    let dir = jobs.join(ID);
    fs::create_dir(&dir)?;
    let now = Utc::now();
    let task = "Add a discount to the cart total and count quantities";
    super::write_meta(
        &dir,
        ID,
        "webshop",
        task,
        now - Duration::minutes(95),
        &[
            (
                "finished",
                json!(super::rfc3339(now - Duration::minutes(88))),
            ),
            ("exit_code", json!(0)),
            // Made by whoever runs the demo: no other user's to run git as.
            ("user", json!("")),
            ("cwd", json!(repo.display().to_string())),
            ("review", serde_json::to_value(&review)?),
        ],
    )?;
    fs::write(dir.join("prompt.txt"), format!("{task}\n"))?;
    fs::write(
        dir.join("output.log"),
        "Reading cart.py\nAdding the discount and quantities\nWriting test_cart.py\n\
         Removing legacy.py\n\nexit:0\n",
    )?;
    Ok(true)
}

/// The project committed, then edited as the job did, with a snapshot on each side.
fn edit(repo: &Path, git: &Git) -> Result<Review> {
    fs::write(repo.join("cart.py"), CART)?;
    fs::write(repo.join("README.md"), "# webshop\n\nA demo project.\n")?;
    fs::write(repo.join("legacy.py"), "# to be removed\nOLD = True\n")?;
    git.run(["init", "-q", "-b", "main"])?;
    git.run(["add", "-A"])?;
    git.run([
        "-c",
        "commit.gpgsign=false",
        "commit",
        "-q",
        "-m",
        "webshop: a cart",
    ])?;
    let before = snapshot::take(git, ID, &format!("luzia: job {ID}, before"))?;
    fs::write(repo.join("cart.py"), CART_AFTER)?;
    fs::write(
        repo.join("test_cart.py"),
        "from cart import total\n\ndef test_discount():\n    assert total([], 0.1) == 0\n",
    )?;
    fs::remove_file(repo.join("legacy.py"))?;
    let after = snapshot::take(git, ID, &format!("luzia: job {ID}, after"))?;
    snapshot::store(git, &snapshot::ref_name(ID, "before"), &before.commit)?;
    snapshot::store(git, &snapshot::ref_name(ID, "after"), &after.commit)?;
    let changes = record::stat(git, &before.commit, &after.commit)?;
    Ok(Review {
        isolation: Isolation::Snapshot,
        repo: repo.display().to_string(),
        base: before.commit,
        after: after.commit,
        changes: Some(changes),
        ..Review::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::JobId;

    #[test]
    fn the_demo_job_has_a_diff_to_open() {
        let tmp = tempfile::tempdir().unwrap();
        let jobs = tmp.path().join("jobs");
        fs::create_dir(&jobs).unwrap();
        if !write(tmp.path(), &jobs).unwrap() {
            assert_ne!(
                std::env::var("LUZIA_REQUIRE_GIT").as_deref(),
                Ok("1"),
                "LUZIA_REQUIRE_GIT=1 but git is not installed"
            );
            eprintln!("SKIPPED: git is not installed");
            return;
        }
        let id = JobId::parse(ID).unwrap();
        let job = crate::jobs::read_job(&jobs, &id, Utc::now()).unwrap();
        let change = crate::jobs::review::change(&job).unwrap();
        let files: Vec<&str> = change.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(files, ["cart.py", "legacy.py", "test_cart.py"]);
        assert!(change.patch.contains("+def total(items, discount=0):"));
        assert!(change.notes.is_empty(), "{:?}", change.notes);
        let stat = job.meta.unwrap().review.clone().unwrap().changes.unwrap();
        assert_eq!(stat, change.stat());
    }
}
