//! `--host NAME` / `--all-hosts` of `jobs`, `questions` and `status`: each host's own luzia
//! answers for its jobs root (`luzia jobs --json` over ssh, `crate::fleet`), every host at once
//! on a thread of its own, and the answers merged here with a HOST column. This machine is the
//! host `local`. A host that fails says why on stderr; the others still print, and the exit
//! status says that one failed.

use std::io::Write;

use anyhow::{Result, anyhow, bail};
use serde_json::{Map, Value};

use crate::cli::{JobsArgs, QuestionsArgs, StatusArgs};
use crate::commands::job_rows::{self, JobRow};
use crate::commands::question_rows::{self, QuestionRow};
use crate::commands::status::ALERT_EXIT;
use crate::config::{Config, HostConfig, LOCAL_HOST};
use crate::fleet;
use crate::jobs::text::sanitize::sanitize_line;

/// The exit status when a host could not answer.
const HOST_FAILED: u8 = 1;

/// One host asked.
pub enum Target<'a> {
    Local,
    Remote { name: &'a str, host: &'a HostConfig },
}

impl Target<'_> {
    pub fn name(&self) -> &str {
        match self {
            Target::Local => LOCAL_HOST,
            Target::Remote { name, .. } => name,
        }
    }
}

/// The hosts named by `--host` (in order, each once), or with `--all-hosts` this machine and
/// every configured host.
pub fn targets<'a>(cfg: &'a Config, names: &[String], all: bool) -> Result<Vec<Target<'a>>> {
    if all {
        let remote = cfg
            .hosts
            .iter()
            .map(|(name, host)| Target::Remote { name, host });
        return Ok(std::iter::once(Target::Local).chain(remote).collect());
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut targets = Vec::new();
    for name in names.iter().filter(|n| seen.insert(n.as_str())) {
        if name == LOCAL_HOST {
            targets.push(Target::Local);
            continue;
        }
        let Some((name, host)) = cfg.hosts.get_key_value(name) else {
            bail!("{}", unknown_host(cfg, name));
        };
        targets.push(Target::Remote { name, host });
    }
    Ok(targets)
}

fn unknown_host(cfg: &Config, name: &str) -> String {
    let file = cfg.file_to_edit();
    let known: Vec<&str> = std::iter::once(LOCAL_HOST)
        .chain(cfg.hosts.keys().map(String::as_str))
        .collect();
    format!(
        "no host '{}': add a [hosts.{}] table with its ssh destination to {file} (`luzia help tui` shows the host flags); known hosts: {}",
        name.escape_debug(),
        name.escape_debug(),
        known.join(", ")
    )
}

/// `work` for every target at once, each on its own thread; the results in target order.
fn each<T: Send>(targets: &[Target], work: impl Fn(&Target) -> Result<T> + Sync) -> Vec<Result<T>> {
    std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = targets.iter().map(|t| s.spawn(move || work(t))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("the thread asking this host failed")))
            })
            .collect()
    })
}

/// Prints each failure on stderr; the exit status to give.
fn report_failures<T>(results: &[(String, Result<T>)]) -> u8 {
    let mut code = 0;
    for (name, r) in results {
        if let Err(e) = r {
            let text = super::describe(e);
            // fleet's errors name the host already.
            if text.starts_with(&format!("host {name}")) {
                crate::say!("luzia: error: {text}");
            } else {
                crate::say!("luzia: error: host {name}: {text}");
            }
            code = HOST_FAILED;
        }
    }
    code
}

/// `luzia ARGS --json` on a target, read back.
fn json_of(
    target: &Target,
    args: &[&str],
    local: impl FnOnce(&mut Vec<u8>) -> Result<()>,
) -> Result<Vec<Value>> {
    let stdout = match target {
        Target::Local => {
            let mut buf = Vec::new();
            local(&mut buf)?;
            buf
        }
        Target::Remote { name, host } => {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            fleet::run(name, host, &args)?.stdout
        }
    };
    match serde_json::from_slice(&stdout) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(_) | Err(_) => bail!(
            "host {}: `luzia {}` did not print a JSON array: is its luzia the same version as this one?",
            target.name(),
            args.join(" ")
        ),
    }
}

/// The element with `"host"` first.
/// The merged list as JSON: each host's own elements, `"host"` first.
fn write_hosted_json(
    hosts: Vec<Option<String>>,
    items: impl Iterator<Item = Value>,
    out: &mut dyn Write,
) -> Result<()> {
    let list: Vec<Value> = hosts
        .iter()
        .zip(items)
        .map(|(host, item)| with_host(host.as_deref().unwrap_or_default(), item))
        .collect();
    writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
    Ok(())
}

fn with_host(host: &str, item: Value) -> Value {
    let mut map = Map::new();
    map.insert("host".into(), Value::from(host));
    if let Value::Object(fields) = item {
        map.extend(fields.into_iter().filter(|(k, _)| k != "host"));
    }
    Value::Object(map)
}

pub fn jobs(cfg: &Config, args: &JobsArgs, out: &mut dyn Write) -> Result<u8> {
    let targets = targets(cfg, &args.hosts, args.all_hosts)?;
    if let Some(id) = &args.id {
        return one_job(cfg, args, id, &targets, out);
    }
    let results: Vec<(String, Result<Vec<Value>>)> = targets
        .iter()
        .map(|t| t.name().to_owned())
        .zip(each(&targets, |t| {
            json_of(t, &["jobs", "--json"], |buf| {
                super::jobs::run(cfg, &local_jobs_args(), buf)
            })
        }))
        .collect();
    let code = report_failures(&results);
    let mut rows: Vec<(JobRow, Value)> = Vec::new();
    for (name, items) in &results {
        for item in items.iter().flatten() {
            let row = JobRow::from_json(name, item);
            let wanted = (args.projects.is_empty() || args.projects.contains(&row.project))
                && (args.statuses.is_empty() || args.statuses.contains(&row.status));
            if wanted {
                rows.push((row, item.clone()));
            }
        }
    }
    rows.sort_by(|(a, _), (b, _)| b.started.cmp(&a.started).then_with(|| b.id.cmp(&a.id)));
    rows.truncate(args.limit.unwrap_or(usize::MAX));
    if args.json {
        let hosts: Vec<_> = rows.iter().map(|(row, _)| row.host.clone()).collect();
        write_hosted_json(hosts, rows.into_iter().map(|(_, item)| item), out)?;
    } else {
        let rows: Vec<JobRow> = rows.into_iter().map(|(row, _)| row).collect();
        let now = chrono::Utc::now();
        let width = super::jobs::terminal_width();
        job_rows::write_table(&rows, args.timing, now, width, super::stdout_colors(), out)?;
    }
    Ok(code)
}

/// Every job of a root, as `luzia jobs --json` lists them.
fn local_jobs_args() -> JobsArgs {
    JobsArgs {
        id: None,
        projects: Vec::new(),
        statuses: Vec::new(),
        json: true,
        timing: false,
        limit: None,
        hosts: Vec::new(),
        all_hosts: false,
    }
}

/// `luzia jobs ID --host NAME`: the host's own view of its job, as it prints it.
fn one_job(
    cfg: &Config,
    args: &JobsArgs,
    id: &crate::jobs::JobId,
    targets: &[Target],
    out: &mut dyn Write,
) -> Result<u8> {
    let [target] = targets else {
        bail!("a job id goes with one host: give a single --host NAME");
    };
    match target {
        Target::Local => {
            let local = JobsArgs {
                id: Some(id.clone()),
                json: args.json,
                ..local_jobs_args()
            };
            super::jobs::run(cfg, &local, out)?;
        }
        Target::Remote { name, host } => {
            let mut remote = vec!["jobs".to_owned(), id.to_string()];
            if args.json {
                remote.push("--json".into());
            }
            let output = fleet::run(name, host, &remote)?;
            out.write_all(&printable(&output.stdout))?;
        }
    }
    Ok(0)
}

pub fn questions(cfg: &Config, args: &QuestionsArgs, out: &mut dyn Write) -> Result<u8> {
    let targets = targets(cfg, &args.hosts, args.all_hosts)?;
    let local_args = QuestionsArgs {
        projects: Vec::new(),
        json: true,
        hosts: Vec::new(),
        all_hosts: false,
    };
    let results: Vec<(String, Result<Vec<Value>>)> = targets
        .iter()
        .map(|t| t.name().to_owned())
        .zip(each(&targets, |t| {
            json_of(t, &["questions", "--json"], |buf| {
                super::questions::list(cfg, &local_args, buf).map(|_| ())
            })
        }))
        .collect();
    let code = report_failures(&results);
    let mut rows: Vec<(QuestionRow, Value)> = results
        .iter()
        .flat_map(|(name, items)| items.iter().flatten().map(move |i| (name, i)))
        .map(|(name, item)| (QuestionRow::from_json(name, item), item.clone()))
        .filter(|(row, _)| args.projects.is_empty() || args.projects.contains(&row.project))
        .collect();
    rows.sort_by_key(|(r, _)| (r.waiting_secs.is_some(), std::cmp::Reverse(r.waiting_secs)));
    if args.json {
        let hosts: Vec<_> = rows.iter().map(|(row, _)| row.host.clone()).collect();
        write_hosted_json(hosts, rows.into_iter().map(|(_, item)| item), out)?;
    } else {
        let rows: Vec<QuestionRow> = rows.into_iter().map(|(row, _)| row).collect();
        if !question_rows::write_sections(&rows, out)? {
            writeln!(out, "no pending questions or gates")?;
        }
    }
    Ok(code)
}

/// Each host's dashboard under its name, in the order asked: a dashboard is one machine's
/// (its CPU, memory and disk beside its jobs), so they are shown side by side, not summed.
pub fn status(cfg: &Config, args: &StatusArgs, out: &mut dyn Write) -> Result<u8> {
    let targets = targets(cfg, &args.hosts, args.all_hosts)?;
    let results: Vec<(String, Result<(Vec<u8>, u8)>)> = targets
        .iter()
        .map(|t| t.name().to_owned())
        .zip(each(&targets, |t| status_of(cfg, args, t)))
        .collect();
    let mut code = report_failures(&results);
    for (i, (name, result)) in results.iter().enumerate() {
        let Ok((text, host_code)) = result else {
            continue;
        };
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "== {} ==",
            crate::jobs::text::sanitize::plain_text(name)
        )?;
        out.write_all(text)?;
        if code == 0 {
            code = code.max(*host_code);
        }
    }
    Ok(code)
}

/// One host's dashboard and its exit status (3 with `--alerts` when it has one).
fn status_of(cfg: &Config, args: &StatusArgs, target: &Target) -> Result<(Vec<u8>, u8)> {
    let mut text = Vec::new();
    let Target::Remote { name, host } = target else {
        let local = StatusArgs {
            project: args.project.clone(),
            alerts: args.alerts,
            recent: args.recent,
            progress: args.progress,
            export: None,
            output: None,
            watch: false,
            interval: args.interval,
            hosts: Vec::new(),
            all_hosts: false,
        };
        let code = super::status::run(cfg, &local, &mut text)?;
        return Ok((text, code));
    };
    let mut remote = vec![
        "status".to_owned(),
        "--recent".into(),
        args.recent.to_string(),
    ];
    if let Some(p) = &args.project {
        remote.extend(["--project".into(), p.clone()]);
    }
    if args.alerts {
        remote.push("--alerts".into());
    }
    if args.progress {
        remote.push("--progress".into());
    }
    match fleet::run(name, host, &remote) {
        Ok(output) => Ok((printable(&output.stdout), 0)),
        // `--alerts` found one: the dashboard is there, and so is the alert's exit status.
        Err(fleet::RemoteError::Failed { code, stdout, .. })
            if args.alerts && code == i32::from(ALERT_EXIT) =>
        {
            Ok((printable(&stdout), ALERT_EXIT))
        }
        Err(e) => Err(e.into()),
    }
}

/// Another host's text, line by line, without what a terminal would obey (escape sequences,
/// control characters): it is shown, never interpreted.
fn printable(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for line in text.split_inclusive(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        out.extend_from_slice(sanitize_line(line).plain().as_bytes());
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overrides;

    fn config(body: &str) -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, body).unwrap();
        let ov = Overrides {
            config: Some(path),
            jobs_dir: None,
        };
        let home = dir.path().to_owned();
        let cfg = Config::load_with(&ov, &|k| (k == "HOME").then(|| home.clone())).unwrap();
        (dir, cfg)
    }

    fn names(targets: &[Target]) -> Vec<String> {
        targets.iter().map(|t| t.name().to_owned()).collect()
    }

    #[test]
    fn hosts_are_this_machine_and_the_configured_ones_each_once() {
        let (_dir, cfg) = config("[hosts.b]\nssh = \"b\"\n[hosts.a]\nssh = \"a\"\n");
        let all = targets(&cfg, &[], true).unwrap();
        assert_eq!(names(&all), ["local", "a", "b"]);
        let some = ["b", "local", "b"].map(String::from);
        assert_eq!(names(&targets(&cfg, &some, false).unwrap()), ["b", "local"]);
        let err = targets(&cfg, &["c".into()], false)
            .err()
            .unwrap()
            .to_string();
        for part in [
            "no host 'c'",
            "[hosts.c]",
            "c.toml",
            "known hosts: local, a, b",
        ] {
            assert!(err.contains(part), "{err}");
        }
    }

    #[test]
    fn the_host_comes_first_in_each_element() {
        let item = serde_json::json!({"id": "x", "host": "forged", "status": "running"});
        let text = serde_json::to_string(&with_host("b", item)).unwrap();
        assert_eq!(text, r#"{"host":"b","id":"x","status":"running"}"#);
    }

    #[test]
    fn another_hosts_text_is_shown_not_obeyed() {
        let text = b"ok \x1b[31mred\x1b[0m\n\x1b]0;title\x07line\x08two\n";
        assert_eq!(
            String::from_utf8(printable(text)).unwrap(),
            "ok red\nlinetwo\n"
        );
    }
}
