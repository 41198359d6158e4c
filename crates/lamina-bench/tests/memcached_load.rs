//! The memcached load generator against a tiny in-process fake server: a correct server
//! gives a clean report with every request counted; a server that loses writes or
//! corrupts values is caught and counted; a server that hangs up fails the load.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    sync::{Arc, Mutex},
    time::Duration,
};

use lamina_bench::memcached::{KeySpace, LoadConfig, LoadReport, Phase, run_load};

/// How the fake server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// Answers STORED to every 10th set (by arrival) without storing it.
    DropsSets,
    /// Flips the first byte of every value it returns.
    CorruptsValues,
    /// Closes the connection on the first get.
    HangsUp,
}

type Store = Arc<Mutex<HashMap<Vec<u8>, (u32, Vec<u8>)>>>;

fn serve_connection(stream: TcpStream, store: &Store, fault: Fault, sets: &Mutex<u64>) {
    stream.set_nodelay(true).unwrap();
    let mut out = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let fields: Vec<&str> = line.trim_end().split(' ').collect();
        let reply = match fields.as_slice() {
            ["set", key, flags, _exptime, len] => {
                let mut data = vec![0; len.parse::<usize>().unwrap() + 2];
                reader.read_exact(&mut data).unwrap();
                data.truncate(data.len() - 2);
                let n = {
                    let mut sets = sets.lock().unwrap();
                    *sets += 1;
                    *sets
                };
                if !(fault == Fault::DropsSets && n % 10 == 0) {
                    let flags = flags.parse().unwrap();
                    store.lock().unwrap().insert(key.as_bytes().to_vec(), (flags, data));
                }
                b"STORED\r\n".to_vec()
            }
            ["get", key] => {
                if fault == Fault::HangsUp {
                    return;
                }
                match store.lock().unwrap().get(key.as_bytes()) {
                    None => b"END\r\n".to_vec(),
                    Some((flags, data)) => {
                        let mut reply =
                            format!("VALUE {key} {flags} {}\r\n", data.len()).into_bytes();
                        let mut data = data.clone();
                        if fault == Fault::CorruptsValues {
                            data[0] ^= 1;
                        }
                        reply.extend_from_slice(&data);
                        reply.extend_from_slice(b"\r\nEND\r\n");
                        reply
                    }
                }
            }
            _ => b"ERROR\r\n".to_vec(),
        };
        if out.write_all(&reply).is_err() {
            return;
        }
    }
}

/// Starts a fake server on an ephemeral port; returns its address. Its threads end when
/// the test process does.
fn fake_server(fault: Fault) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let store: Store = Arc::default();
    let sets = Arc::new(Mutex::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let (store, sets) = (store.clone(), sets.clone());
            std::thread::spawn(move || serve_connection(stream.unwrap(), &store, fault, &sets));
        }
    });
    addr
}

fn small_load(server: String) -> LoadConfig {
    let mut config = LoadConfig::new(server);
    config.connections = 3;
    config.pipeline_depth = 4;
    config.keys = KeySpace::new(500, 12, 40, 3).unwrap();
    config.ops = Some(1001);
    config.reply_timeout = Duration::from_secs(30);
    config
}

fn load(config: &LoadConfig) -> LoadReport {
    let outcomes = run_load(config, &mut |_| {}).expect("the load runs");
    LoadReport::new(config, &outcomes)
}

#[test]
fn a_correct_server_gives_a_clean_report() {
    let config = small_load(fake_server(Fault::None));
    let report = load(&config);
    assert_eq!(report.errors_total(), 0, "{}", report.to_table());
    let phases: Vec<(&str, u64, u64)> =
        report.phases.iter().map(|p| (p.phase.as_str(), p.gets.count, p.sets.count)).collect();
    assert_eq!(phases[0], ("set", 0, 500), "every record set once");
    assert_eq!(phases[1], ("get", 1001, 0), "--ops split over 3 connections");
    let (name, gets, sets) = phases[2];
    assert_eq!((name, gets + sets), ("mixed", 1001));
    assert!(gets > sets * 3, "90% gets: {gets} gets, {sets} sets");
    assert!(report.phases.iter().all(|p| p.requests_per_s > 0.0 && p.all.max_us > 0.0));
    let json = serde_json::to_string(&report).unwrap();
    let read: LoadReport = serde_json::from_str(&json).unwrap();
    assert_eq!((read.schema.as_str(), &read.params), ("lamina-bench-memcached", &report.params));
    assert_eq!(read.phases.iter().map(|p| p.requests).collect::<Vec<_>>(), [500, 1001, 1001]);
    let table = report.to_table();
    assert!(table.contains("mixed  all"), "{table}");
    assert!(!table.contains("ERRORS"), "{table}");
}

#[test]
fn lost_writes_and_wrong_values_are_counted() {
    let report = load(&small_load(fake_server(Fault::DropsSets)));
    let get = &report.phases[1];
    assert_eq!(report.phases[0].errors.total(), 0, "the lie is only visible on reads");
    assert!(get.errors.get_misses > 0, "{}", report.to_table());
    assert_eq!(get.errors.get_misses, get.errors.total());
    assert!(get.errors.first.as_deref().unwrap().contains("a miss"));
    assert!(report.to_table().contains("ERRORS in phase get"));

    let mut config = small_load(fake_server(Fault::CorruptsValues));
    config.phases = vec![Phase::Set, Phase::Get];
    let report = load(&config);
    assert_eq!(report.phases[1].errors.get_wrong, 1001, "every get is checked");
    assert!(report.phases[1].errors.first.as_deref().unwrap().contains("not the one set"));
}

#[test]
fn a_server_that_hangs_up_fails_the_load() {
    let config = small_load(fake_server(Fault::HangsUp));
    let err = run_load(&config, &mut |_| {}).unwrap_err().to_string();
    // A FIN reads as "closed the connection"; if the server hung up with requests unread,
    // the kernel sends a reset instead.
    assert!(err.contains(&format!("reading from {}", config.server)), "{err}");
    let refused = LoadConfig::new("127.0.0.1:1");
    let err = run_load(&refused, &mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("connecting to the memcached server at 127.0.0.1:1"), "{err}");
}
