//! What the jobs mean taken together: known issues found in logs, alarms (stalled, over
//! budget, waiting), each job's timeline and the recent-events feed, what the runs cost, and the status report.

pub mod alarms;
pub mod known_issues;
pub mod report;
pub mod timeline;
pub mod totals;
