//! The day each grant was last used (a refresh or a data-API call), recorded off the request path.
//!
//! A request only notes the grant in memory: one lock of one of 16 shards and a hash lookup, no store write. A
//! grant already noted in the current hour costs nothing more. The server writes the noted grants in one batch every
//! `last_used_flush_secs` (and once more when it stops), so each instance writes at most once per grant per hour;
//! the store keeps the day (UTC) and only moves it forward. A crash loses at most one batch of "last used" days,
//! never a grant or an event. The map forgets grants not used for an hour and holds at most
//! [`MAX_TRACKED`] of them: past that, new grants are not noted until the next flush makes room.

use latchkey_core::access_token::GrantId;
use latchkey_core::time::UnixTime;
use latchkey_store::Store;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

const SHARDS: usize = 16;
/// The most grants tracked at once (all shards).
pub const MAX_TRACKED: usize = 1 << 20;

/// A grant noted in an hour, and whether that note is still to be written.
#[derive(Debug, Clone, Copy)]
struct Noted {
    hour: i64,
    pending: bool,
}

/// The grants used lately, waiting for their batch.
#[derive(Debug, Default)]
pub struct LastUsed {
    shards: [Mutex<HashMap<GrantId, Noted>>; SHARDS],
}

impl LastUsed {
    /// Notes that a grant was used at `now`.
    pub fn note(&self, id: &GrantId, now: UnixTime) {
        let hour = now.0.div_euclid(3600);
        let mut map = self.shards[usize::from(id.0[15]) % SHARDS].lock().unwrap_or_else(PoisonError::into_inner);
        let room = map.len() < MAX_TRACKED / SHARDS;
        match map.get_mut(id) {
            Some(n) if n.hour >= hour => {}
            Some(n) => *n = Noted { hour, pending: true },
            None if room => {
                map.insert(*id, Noted { hour, pending: true });
            }
            None => {}
        }
    }

    /// Takes the notes still to be written, each as the first second of its day, and forgets grants last noted
    /// before the previous hour.
    pub fn take(&self, now: UnixTime) -> Vec<(GrantId, UnixTime)> {
        let current = now.0.div_euclid(3600);
        let mut out = Vec::new();
        for shard in &self.shards {
            let mut map = shard.lock().unwrap_or_else(PoisonError::into_inner);
            for (id, n) in map.iter_mut().filter(|(_, n)| n.pending) {
                n.pending = false;
                let at = n.hour * 3600;
                out.push((*id, UnixTime(at - at.rem_euclid(86_400))));
            }
            map.retain(|_, n| n.hour >= current - 1);
        }
        out
    }

    /// Writes the pending notes in one batch; a failure puts nothing back (a day is only a hint) and is logged.
    pub async fn flush(&self, store: &dyn Store, now: UnixTime) {
        let batch = self.take(now);
        if let Err(e) = store.record_last_used(&batch).await {
            tracing::warn!(error = %e, grants = batch.len(), "recording when grants were last used");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_written_once_an_hour_as_its_day() {
        let used = LastUsed::default();
        let g = GrantId([7; 16]);
        let t = UnixTime(1_700_000_000);
        used.note(&g, t);
        used.note(&g, t.plus(10));
        let day = UnixTime(t.0 - t.0.rem_euclid(86_400));
        assert_eq!(used.take(t.plus(20)), vec![(g, day)], "noted twice, written once");
        used.note(&g, t.plus(30));
        assert!(used.take(t.plus(40)).is_empty(), "the same hour is not written again");
        used.note(&g, t.plus(3600));
        assert_eq!(used.take(t.plus(3600)).len(), 1, "the next hour is");
        assert!(used.take(t.plus(4 * 3600)).is_empty());
        used.note(&g, t.plus(4 * 3600));
        assert_eq!(used.take(t.plus(4 * 3600)).len(), 1, "a forgotten grant is noted afresh");
    }
}
