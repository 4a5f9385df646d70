//! `--checkpoint-key`: the server signs its decision log now and then (see
//! [`crate::checkpoint`]). Beside the log rather than in the server: the
//! timer is the log's, and the server only starts it.

use std::sync::Arc;

/// A decision log signed with an operator's key at an interval.
#[derive(Debug)]
pub struct Checkpoints {
    /// The server's decision log.
    pub log: std::path::PathBuf,
    /// The operator's key, read once at start.
    pub key: crate::checkpoint::SigningKey,
    /// How often.
    pub every: std::time::Duration,
    /// The checkpoint written last, by its record number: none is written
    /// over it while nothing else was logged.
    last: std::sync::Mutex<Option<u64>>,
}

impl Checkpoints {
    /// Signs `log` with `key` every `every`.
    pub fn new(
        log: std::path::PathBuf,
        key: crate::checkpoint::SigningKey,
        every: std::time::Duration,
    ) -> Checkpoints {
        Checkpoints {
            log,
            key,
            every,
            last: std::sync::Mutex::new(None),
        }
    }

    /// Appends a checkpoint over the log's last record unless that is the
    /// checkpoint written last; a failure is said on stderr (the next tick
    /// tries again).
    pub fn sign(&self) {
        use crate::checkpoint;
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match checkpoint::write_unless(&self.log, &self.key, *last) {
            Ok((_, Some(seq))) => *last = Some(seq),
            Ok((_, None)) => {}
            Err(e) => eprintln!("toolgate serve: no checkpoint written: {e}"),
        }
    }

    /// Signs the decision log every `every`, off the runtime's threads (a
    /// checkpoint takes the log's lock). Runs until dropped.
    pub async fn run(self: Arc<Self>) {
        let mut ticks = tokio::time::interval(self.every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            let checkpoints = self.clone();
            let _ = tokio::task::spawn_blocking(move || checkpoints.sign()).await;
        }
    }
}
