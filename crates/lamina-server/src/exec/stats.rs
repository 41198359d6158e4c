//! `stats`: memcached's general counters, `stats settings`, and lamina's engine counters
//! (`stats lamina`, also appended to the general group with a `lamina_` prefix).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Exec;
use super::classic::VERSION_LINE;

impl Exec<'_> {
    pub(crate) fn stats(&self, group: Option<&str>, out: &mut Vec<u8>) {
        let mut text = String::new();
        match group {
            None => {
                self.general_stats(&mut text);
                self.engine_stats(&mut text);
            }
            Some("settings") => self.settings_stats(&mut text),
            Some("lamina") => self.engine_stats(&mut text),
            // memcached answers groups it does not have (and `stats noreply`) with ERROR.
            Some(_) => {
                out.extend_from_slice(b"ERROR\r\n");
                return;
            }
        }
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(b"END\r\n");
    }

    fn general_stats(&self, text: &mut String) {
        let shared = self.shared;
        let c = &shared.counters;
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let engine = shared.db.stats();
        // The server's state record is a key of the engine, not an item.
        let items = engine.keys.map_or(0, |keys| keys.saturating_sub(1));
        let version = VERSION_LINE.trim_end().trim_start_matches("VERSION ");
        let lines: [(&str, String); 8] = [
            ("pid", shared.pid.to_string()),
            ("uptime", shared.started.elapsed().as_secs().to_string()),
            ("time", self.now_secs.to_string()),
            ("version", version.to_string()),
            ("pointer_size", (usize::BITS).to_string()),
            ("max_connections", shared.config.connections_max.to_string()),
            ("curr_items", items.to_string()),
            ("bytes", engine.memory_bytes.to_string()),
        ];
        for (name, value) in lines {
            let _ = write!(text, "STAT {name} {value}\r\n");
        }
        let counters: [(&str, &AtomicU64); 33] = [
            ("total_items", &c.total_items),
            ("curr_connections", &c.curr_connections),
            ("total_connections", &c.total_connections),
            ("rejected_connections", &c.rejected_connections),
            ("cmd_get", &c.cmd_get),
            ("cmd_set", &c.cmd_set),
            ("cmd_flush", &c.cmd_flush),
            ("cmd_touch", &c.cmd_touch),
            ("cmd_meta", &c.cmd_meta),
            ("cmd_lscan", &c.cmd_scan),
            ("get_hits", &c.get_hits),
            ("get_misses", &c.get_misses),
            ("get_expired", &c.get_expired),
            ("get_flushed", &c.get_flushed),
            ("delete_misses", &c.delete_misses),
            ("delete_hits", &c.delete_hits),
            ("incr_misses", &c.incr_misses),
            ("incr_hits", &c.incr_hits),
            ("decr_misses", &c.decr_misses),
            ("decr_hits", &c.decr_hits),
            ("cas_misses", &c.cas_misses),
            ("cas_hits", &c.cas_hits),
            ("cas_badval", &c.cas_badval),
            ("touch_hits", &c.touch_hits),
            ("touch_misses", &c.touch_misses),
            ("bytes_read", &c.bytes_read),
            ("bytes_written", &c.bytes_written),
            ("reclaimed", &c.reclaimed),
            ("protocol_errors", &c.protocol_errors),
            ("engine_errors", &c.engine_errors),
            ("group_syncs", &c.syncs),
            ("sync_waits", &c.sync_waits),
            ("sweeps", &c.sweeps),
        ];
        for (name, counter) in counters {
            let _ = write!(text, "STAT {name} {}\r\n", get(counter));
        }
        let _ = write!(text, "STAT evictions 0\r\n");
    }

    fn settings_stats(&self, text: &mut String) {
        let config = &self.shared.config;
        let durability = match config.durability {
            lamina::Durability::Sync => "sync".to_string(),
            lamina::Durability::None => "none".to_string(),
            lamina::Durability::Buffered { max_delay } => {
                format!("buffered:{}ms", max_delay.as_millis())
            }
        };
        let lines: [(&str, String); 10] = [
            ("maxconns", config.connections_max.to_string()),
            ("interface", config.listen.ip().to_string()),
            ("tcpport", config.listen.port().to_string()),
            ("item_size_max", config.item_bytes_max.to_string()),
            ("line_bytes_max", config.line_bytes_max.to_string()),
            ("pending_reply_bytes_max", config.pending_reply_bytes_max.to_string()),
            ("sweep_interval_secs", config.sweep_interval.as_secs().to_string()),
            ("durability", durability),
            ("engine", self.shared.db.engine().name().to_string()),
            ("verbosity", self.shared.verbosity.load(Ordering::Relaxed).to_string()),
        ];
        for (name, value) in lines {
            let _ = write!(text, "STAT {name} {value}\r\n");
        }
    }

    fn engine_stats(&self, text: &mut String) {
        let stats = self.shared.db.stats();
        let io = &stats.io;
        let _ = write!(text, "STAT lamina_engine {}\r\n", stats.engine);
        if let Some(keys) = stats.keys {
            let _ = write!(text, "STAT lamina_keys {keys}\r\n");
        }
        let lines: [(&str, u64); 8] = [
            ("memory_bytes", stats.memory_bytes),
            ("user_bytes_written", stats.user_bytes_written),
            ("io_bytes_read", io.bytes_read),
            ("io_bytes_written", io.bytes_written),
            ("io_reads", io.reads()),
            ("io_writes", io.writes()),
            ("io_syncs", io.syncs),
            ("io_live_bytes", io.live_bytes),
        ];
        for (name, value) in lines {
            let _ = write!(text, "STAT lamina_{name} {value}\r\n");
        }
        for (name, value) in &stats.extra {
            let _ = write!(text, "STAT lamina_{name} {value}\r\n");
        }
    }
}
