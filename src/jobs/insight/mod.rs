//! What the jobs mean taken together: known issues found in logs, alarms (stalled, over
//! budget, waiting), each job's timeline and the recent-events feed, what the runs cost, the
//! status report, and the notifications worth sending a person who is not looking.

pub mod alarms;
pub mod known_issues;
pub mod notify;
pub mod report;
pub mod timeline;
pub mod totals;
