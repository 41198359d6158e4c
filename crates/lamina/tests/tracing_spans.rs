//! Opening a database emits its `tracing` span (with the engine's recovery inside) and an
//! event; a failed open emits an error event.

use std::io::Write;
use std::sync::{Arc, Mutex};

use lamina::{Db, Durability, EngineKind, Options};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::FmtSpan;

/// A writer into a shared buffer, for the formatting subscriber.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Runs `run` and returns what it logged. One global subscriber for the whole binary (scoped
/// subscribers on parallel test threads meet tracing's global per-callsite interest cache:
/// events were lost); the captures are serialized and each starts from an empty buffer.
fn captured(run: impl FnOnce()) -> String {
    static SINK: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let sink = SINK.get_or_init(|| {
        let out = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(out.clone())
            .with_span_events(FmtSpan::NEW)
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");
        out
    });
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    sink.0.lock().unwrap().clear();
    run();
    String::from_utf8(sink.0.lock().unwrap().clone()).unwrap()
}

#[test]
fn open_emits_its_span_with_recovery_inside() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options::new().engine(EngineKind::Trie).durability(Durability::Sync);
    let log = captured(|| {
        let db = Db::open(dir.path(), options).unwrap();
        db.put("k", "v").unwrap();
        db.close().unwrap();
    });
    assert!(log.contains("lamina_open"), "{log}");
    assert!(log.contains("engine=trie"), "{log}");
    assert!(log.contains("lamina_open{engine=trie") && log.contains(":recovery"), "{log}");
    assert!(log.contains("database open"), "{log}");
    let log = captured(|| drop(Db::open(dir.path(), options).unwrap()));
    assert!(log.contains("recovery{existing=true}"), "{log}");
}

#[test]
fn a_failed_open_emits_an_error_event() {
    let dir = tempfile::tempdir().unwrap();
    drop(Db::open(dir.path(), Options::new().engine(EngineKind::Mem)).unwrap());
    let log = captured(|| {
        let err = Db::open(dir.path(), Options::new().engine(EngineKind::Trie)).unwrap_err();
        assert!(matches!(err, lamina::Error::Incompatible { .. }), "{err}");
    });
    assert!(log.contains("ERROR") && log.contains("opening the database failed"), "{log}");
}
