//! The hosts' links: one `crate::fleet::link::Link` per remote host (its own thread and ssh),
//! whose reports a forwarding thread turns into `Event::Host`. Job lines that arrive together
//! (the whole state at connect, a burst of changes) come as one `HostNews::Jobs`: 200 jobs at
//! connect are one event for the loop, not 200.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use crate::config::HostConfig;
use crate::fleet::link::{Link, LinkEvent};
use crate::jobs::JobId;
use crate::tui::event::{Event, HostNews};

/// How long the forwarder waits for the next line of a burst before sending what it has: far
/// below what a person sees, far above the gap between lines of one burst.
const LINGER: Duration = Duration::from_millis(2);
/// The longest a report is held back to join others.
const HOLD_AT_MOST: Duration = Duration::from_millis(30);
/// The most reports joined into one event.
const JOIN_AT_MOST: usize = 20_000;

/// The links of the cockpit's hosts. Dropping it ends every ssh (the links kill them) and the
/// forwarding threads with them.
pub struct Links {
    _links: Vec<Link>,
}

impl Links {
    pub fn start(
        hosts: &[(String, HostConfig)],
        tx: &UnboundedSender<Event>,
    ) -> std::io::Result<Links> {
        let mut links = Vec::new();
        for (name, config) in hosts {
            let (reports, rx) = mpsc::channel::<LinkEvent>();
            let (host, tx) = (name.clone(), tx.clone());
            std::thread::Builder::new()
                .name("luzia-link".into())
                .spawn(move || forward(&host, &rx, &tx))?;
            let on = Box::new(move |ev: LinkEvent| {
                // The forwarder is gone only when the cockpit is.
                let _ = reports.send(ev);
            });
            links.push(Link::start(name.clone(), config.clone(), on));
        }
        Ok(Links { _links: links })
    }
}

/// Sends a host's reports to the loop, bursts joined, until its link is dropped.
fn forward(host: &str, rx: &Receiver<LinkEvent>, tx: &UnboundedSender<Event>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        let until = Instant::now() + HOLD_AT_MOST;
        let mut ended = false;
        while batch.len() < JOIN_AT_MOST {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(LINGER.min(left)) {
                Ok(ev) => batch.push(ev),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    ended = true;
                    break;
                }
            }
        }
        for news in joined(host, batch) {
            if tx
                .send(Event::Host {
                    host: host.to_owned(),
                    news,
                })
                .is_err()
            {
                return;
            }
        }
        if ended {
            return;
        }
    }
}

/// A remote job's `dir`: never read (every read of a job's files skips remote keys), and if
/// it were, it names nothing: `/dev/null` is not a directory.
pub fn remote_dir(host: &str, id: &JobId) -> PathBuf {
    PathBuf::from(format!("/dev/null/luzia-host-{host}/{id}"))
}

/// The reports in the app's terms, in their order, runs of job lines and of gone lines each
/// joined into one; heartbeats among other news say nothing more and are dropped.
pub fn joined(host: &str, batch: Vec<LinkEvent>) -> Vec<HostNews> {
    let only_heartbeats = batch.iter().all(|e| matches!(e, LinkEvent::Heartbeat));
    let mut out: Vec<HostNews> = Vec::new();
    for ev in batch {
        let news = match ev {
            LinkEvent::Connecting => HostNews::Connecting,
            LinkEvent::Hello(h) => HostNews::Up {
                luzia: h.luzia,
                projects: h.projects,
            },
            LinkEvent::Job { job, .. } => {
                let id = job.id.clone();
                let key = JobId::on_host(host, &id);
                let dir = remote_dir(host, &id);
                let job = job.into_job(key, dir);
                if let Some(HostNews::Jobs(jobs)) = out.last_mut() {
                    jobs.push(job);
                    continue;
                }
                HostNews::Jobs(vec![job])
            }
            LinkEvent::Gone(id) => {
                let key = JobId::on_host(host, &id);
                if let Some(HostNews::Gone(ids)) = out.last_mut() {
                    ids.push(key);
                    continue;
                }
                HostNews::Gone(vec![key])
            }
            LinkEvent::Synced => HostNews::Synced,
            // Among other news a heartbeat says nothing more; alone, once is enough.
            LinkEvent::Heartbeat if !only_heartbeats || !out.is_empty() => continue,
            LinkEvent::Heartbeat => HostNews::Heartbeat,
            LinkEvent::Down { error } => HostNews::Down { error },
            LinkEvent::Incompatible { message } => HostNews::Incompatible { message },
        };
        out.push(news);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::fixtures;
    use crate::jobs::wire::{Change, Hello, Record};

    fn job_line(i: usize) -> LinkEvent {
        let mut job = fixtures::jobs().remove(0);
        job.id = JobId::parse(&format!("120000-{i:04}")).unwrap();
        LinkEvent::Job {
            change: Change::Added,
            job: Box::new(Record::of(&job)),
            settled: Vec::new(),
        }
    }

    #[test]
    fn the_state_at_connect_is_one_event_keyed_on_the_host() {
        let mut batch = vec![
            LinkEvent::Connecting,
            LinkEvent::Hello(Hello {
                luzia: "0.9.0".into(),
                projects: vec!["web".into()],
                ..Hello::default()
            }),
        ];
        batch.extend((0..200).map(job_line));
        batch.push(LinkEvent::Synced);
        let news = joined("gpu2", batch);
        assert_eq!(news.len(), 4, "{news:?}");
        assert!(matches!(news[0], HostNews::Connecting));
        assert!(
            matches!(&news[1], HostNews::Up { luzia, projects } if luzia == "0.9.0" && projects == &["web"])
        );
        let HostNews::Jobs(jobs) = &news[2] else {
            panic!("{:?}", news[2]);
        };
        assert_eq!(jobs.len(), 200);
        assert_eq!(jobs[7].id.as_str(), "120000-0007@gpu2");
        assert_eq!(jobs[7].id.host(), Some("gpu2"));
        assert!(
            !jobs[7].dir().exists(),
            "a remote job's dir names nothing here"
        );
        assert!(matches!(news[3], HostNews::Synced));
    }

    #[test]
    fn order_is_kept_and_runs_of_the_same_news_are_joined() {
        let gone = |s: &str| LinkEvent::Gone(JobId::parse(s).unwrap());
        let batch = vec![
            job_line(1),
            job_line(2),
            gone("120000-0001"),
            gone("120000-0003"),
            LinkEvent::Heartbeat,
            job_line(1),
            LinkEvent::Down {
                error: "Connection refused".into(),
            },
        ];
        let news = joined("b", batch);
        assert_eq!(news.len(), 4, "{news:?}");
        assert!(matches!(&news[0], HostNews::Jobs(j) if j.len() == 2));
        assert!(
            matches!(&news[1], HostNews::Gone(ids) if ids.iter().map(|i| i.as_str()).eq(["120000-0001@b", "120000-0003@b"]))
        );
        assert!(matches!(&news[2], HostNews::Jobs(j) if j.len() == 1));
        assert!(matches!(&news[3], HostNews::Down { error } if error == "Connection refused"));
        // Heartbeats alone still say the host is alive, once.
        let beats = joined("b", vec![LinkEvent::Heartbeat, LinkEvent::Heartbeat]);
        assert!(matches!(beats[..], [HostNews::Heartbeat]));
    }
}
