//! Remote hosts' jobs coming into the state: what each host's link reports, already keyed
//! `"<id>@<host>"` (see `JobId::on_host`).

use super::App;
use crate::jobs::JobId;
use crate::tui::effect::Effect;
use crate::tui::event::HostNews;

impl App {
    pub(super) fn on_host(&mut self, host: String, news: HostNews) -> Vec<Effect> {
        match news {
            HostNews::Jobs(jobs) => {
                let read: Vec<JobId> = jobs.iter().map(|j| j.id.clone()).collect();
                for job in jobs.into_iter().filter(|j| j.id.host() == Some(&host)) {
                    self.jobs.insert(job.id.clone(), job);
                }
                self.after_read(false, Some(&read))
            }
            HostNews::Gone(ids) => {
                for id in ids.iter().filter(|id| id.host() == Some(&host)) {
                    self.jobs.remove(id);
                }
                self.after_read(false, Some(&ids))
            }
            HostNews::Connecting
            | HostNews::Up { .. }
            | HostNews::Synced
            | HostNews::Heartbeat
            | HostNews::Down { .. }
            | HostNews::Incompatible { .. } => {
                self.dirty = false;
                vec![]
            }
        }
    }
}
