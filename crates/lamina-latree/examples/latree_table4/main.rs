//! Experiment `latree-table4` (issue 18): the LA-tree against the B+tree baseline
//! (`buffered = false`, engine `latree-btree`) on the paper's Uniform workload at several
//! lookups-to-updates ratios (LTU), on the modeled `ssd-msp7525` (Table 4) and
//! `nand-toshiba` (Table 2, with energy) devices; plus Figure 6(b), the buffer sizes ADAPT
//! chooses against LTU. Single-threaded, on the tree itself (not through `lamina::Db`), over
//! a `MemoryStorage` whose accounting charges the device profile per access: every number is
//! exact and deterministic, wall time plays no part.
//!
//! ```text
//! cargo run --release -p lamina-latree --example latree_table4 -- \
//!     [--keys 200000] [--updates 1000000] [--ltu 10,50,100,200,500,1000] \
//!     [--profiles ssd-msp7525,nand-toshiba] [--rules paper,break-even] \
//!     [--memory-bytes 131072] [--seed 18] [--flash-bytes 0] [--out DIR]
//! ```
//!
//! `--out DIR` writes `results.csv`, `tables.md` and the SVG plots there. `--flash-bytes N`
//! gives each tree `N` bytes of flash, two partitions of `N / 2` (section 4.3): partitions
//! are then reclaimed (`tree/reclaim.rs`) and the "+reclamation" time of Table 3's last row
//! is the modeled time (which includes the reclamations' reads and writes) plus the modeled
//! erases; 0 (the default) never reclaims, as the paper's tables without reclamation.

mod meter;
mod plot;
mod workload;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use lamina_core::{Error, Result};
use lamina_latree::adapt::SavingsRule;
use lamina_latree::node::NodeLayout;
use lamina_latree::tree::{LaTree, LaTreeOptions, PARTITION_BYTES_MAX, PARTITION_BYTES_MIN};
use lamina_storage::{AccountingOptions, DeviceProfile, MemoryStorage, Storage};

use meter::MeteredStorage;
use workload::{Op, Workload, key_bytes, value_of};

/// Key and value sizes of the paper's traces: a 4-byte integer key, a 4-byte record id.
const KEY_BYTES: usize = 4;
const VALUE_BYTES: usize = 4;

#[derive(Debug, Clone)]
struct Args {
    keys: u64,
    updates: u64,
    ltus: Vec<u64>,
    profiles: Vec<DeviceProfile>,
    rules: Vec<SavingsRule>,
    memory_bytes: usize,
    seed: u64,
    /// Flash per tree (two partitions); 0: no reclamation.
    flash_bytes: u64,
    out: Option<PathBuf>,
}

impl Args {
    fn parse() -> Result<Self> {
        let mut args = Args {
            keys: 200_000,
            updates: 1_000_000,
            ltus: vec![10, 50, 100, 200, 500, 1000],
            profiles: vec![DeviceProfile::ssd_msp7525(), DeviceProfile::nand_toshiba()],
            rules: vec![SavingsRule::Paper, SavingsRule::BreakEven],
            memory_bytes: 128 << 10,
            seed: 18,
            flash_bytes: 0,
            out: None,
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let bad = |reason: String| Error::option("arguments", format!("{flag}: {reason}"));
            let value = it.next().ok_or_else(|| bad("needs a value".into()))?;
            let number =
                |v: &str| v.replace('_', "").parse::<u64>().map_err(|e| bad(e.to_string()));
            match flag.as_str() {
                "--keys" => args.keys = number(&value)?,
                "--updates" => args.updates = number(&value)?,
                "--memory-bytes" => args.memory_bytes = number(&value)? as usize,
                "--seed" => args.seed = number(&value)?,
                "--flash-bytes" => args.flash_bytes = number(&value)?,
                "--ltu" => args.ltus = value.split(',').map(number).collect::<Result<_>>()?,
                "--profiles" => {
                    args.profiles =
                        value.split(',').map(DeviceProfile::from_name).collect::<Result<_>>()?;
                }
                "--rules" => {
                    args.rules = value
                        .split(',')
                        .map(|r| match r {
                            "paper" => Ok(SavingsRule::Paper),
                            "break-even" => Ok(SavingsRule::BreakEven),
                            _ => Err(Error::option("--rules", format!("{r}: paper|break-even"))),
                        })
                        .collect::<Result<_>>()?;
                }
                "--out" => args.out = Some(PathBuf::from(value)),
                _ => return Err(bad("unknown flag (see the example's docs)".into())),
            }
        }
        Ok(args)
    }
}

/// Which tree a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    LaTree(SavingsRule),
    BTree,
}

impl Engine {
    fn label(self) -> &'static str {
        match self {
            Engine::LaTree(SavingsRule::Paper) => "latree",
            Engine::LaTree(SavingsRule::BreakEven) => "latree-break-even",
            Engine::BTree => "latree-btree",
        }
    }
}

/// What one run measured over its mixed phase (the preload excluded).
#[derive(Debug, Clone)]
struct Outcome {
    profile: &'static str,
    engine: Engine,
    ltu: u64,
    ops: u64,
    lookups: u64,
    /// Modeled device time, storage accounting (sequential = continues the previous access).
    modeled_ns: u64,
    /// Modeled device time, stream classification ([`meter`]).
    stream_ns: u64,
    energy_nj: u64,
    node_reads: u64,
    node_writes: u64,
    buffer_pages_written: u64,
    buffer_pages_read: u64,
    emptyings: u64,
    entries_emptied: u64,
    emptied_max: u64,
    root_emptyings: u64,
    root_entries_emptied: u64,
    height: u8,
    /// Section 4.3: partitions reclaimed, valid nodes copied, modeled erase time.
    reclamations: u64,
    nodes_copied: u64,
    erase_ns: u64,
    wall_s: f64,
}

impl Outcome {
    fn per_op(&self, total: u64) -> f64 {
        total as f64 / self.ops as f64
    }

    fn time_us(&self) -> f64 {
        self.per_op(self.modeled_ns) / 1e3
    }

    /// With the modeled erases of reclamation (Table 3's "+reclamation").
    fn time_with_erases_us(&self) -> f64 {
        self.per_op(self.modeled_ns + self.erase_ns) / 1e3
    }

    fn stream_us(&self) -> f64 {
        self.per_op(self.stream_ns) / 1e3
    }

    fn energy_uj(&self) -> f64 {
        self.per_op(self.energy_nj) / 1e3
    }

    fn mean_emptied(&self) -> f64 {
        if self.emptyings == 0 { 0.0 } else { self.entries_emptied as f64 / self.emptyings as f64 }
    }

    fn mean_root_emptied(&self) -> f64 {
        if self.root_emptyings == 0 {
            0.0
        } else {
            self.root_entries_emptied as f64 / self.root_emptyings as f64
        }
    }

    fn mean_lower_emptied(&self) -> f64 {
        let n = self.emptyings - self.root_emptyings;
        if n == 0 {
            0.0
        } else {
            (self.entries_emptied - self.root_entries_emptied) as f64 / n as f64
        }
    }
}

fn options(args: &Args, device: DeviceProfile, engine: Engine) -> Result<LaTreeOptions> {
    let mut options = LaTreeOptions::for_device(device);
    // Section 4.1: small nodes on raw NAND (one 512 B page), page-sized nodes on SSDs.
    options.node_bytes = NodeLayout::for_device(&device, KEY_BYTES, VALUE_BYTES)?.node_bytes();
    options.key_bytes_max = KEY_BYTES;
    options.value_bytes_max = VALUE_BYTES;
    options.memory_bytes = args.memory_bytes;
    options.crash_consistent = false;
    options.partition_bytes = match args.flash_bytes {
        0 => PARTITION_BYTES_MAX,
        flash => (flash / 2).clamp(PARTITION_BYTES_MIN, PARTITION_BYTES_MAX),
    };
    options.mean_entry_bytes = (KEY_BYTES + VALUE_BYTES + 8) as u64;
    match engine {
        Engine::LaTree(rule) => options.savings_rule = rule,
        Engine::BTree => {
            // The baseline gets all the memory as node cache (it has no buffer pool).
            options.buffered = false;
            options.node_cache_percent = 100;
        }
    }
    Ok(options)
}

fn run(args: &Args, device: DeviceProfile, engine: Engine, ltu: u64) -> Result<Outcome> {
    let started = Instant::now();
    let energy_page = device.energy().map_or(4096, |e| e.page_bytes);
    let accounting =
        AccountingOptions { block_bytes: energy_page, device, ..AccountingOptions::default() };
    let storage = MeteredStorage::new(MemoryStorage::with_options(accounting)?, device);
    let mut tree = LaTree::create(&storage, options(args, device, engine)?)?;
    // The trace depends on the seed and LTU only: every engine and profile sees the same.
    let mut workload = Workload::new(args.seed ^ ltu.rotate_left(32), ltu);
    for _ in 0..args.keys {
        let key = workload.fresh_key();
        workload.live.insert(key);
        tree.put(&key_bytes(key), &value_of(key))?;
    }
    let io_before = storage.io_stats();
    let stream_before = storage.meter().ns();
    let nodes_before = tree.node_cache().store().stats();
    let buffers_before = tree.buffer_pool().stats().store;
    let counters_before = tree.counters();
    let (mut updates, mut lookups) = (0, 0);
    while updates < args.updates {
        match workload.next_op() {
            Op::Insert(key) => {
                tree.put(&key_bytes(key), &value_of(key))?;
                updates += 1;
            }
            Op::Delete(key) => {
                tree.delete(&key_bytes(key))?;
                updates += 1;
            }
            Op::Lookup(key) => {
                let got = tree.get(&key_bytes(key))?;
                assert_eq!(got.as_deref(), Some(&value_of(key)[..]), "lookup of live key {key}");
                lookups += 1;
            }
        }
    }
    let io = storage.io_stats().since(&io_before);
    let nodes = tree.node_cache().store().stats();
    let buffers = tree.buffer_pool().stats().store;
    let counters = tree.counters();
    let outcome = Outcome {
        profile: device.name,
        engine,
        ltu,
        ops: updates + lookups,
        lookups,
        modeled_ns: io.modeled_device_ns,
        stream_ns: storage.meter().ns() - stream_before,
        energy_nj: device.modeled_energy_nj(&io, energy_page)?,
        node_reads: nodes.node_reads - nodes_before.node_reads,
        node_writes: nodes.node_writes - nodes_before.node_writes,
        buffer_pages_written: buffers.pages_written - buffers_before.pages_written,
        buffer_pages_read: buffers.pages_read - buffers_before.pages_read,
        emptyings: counters.emptyings - counters_before.emptyings,
        entries_emptied: counters.entries_emptied - counters_before.entries_emptied,
        emptied_max: counters.emptied_entries_max,
        root_emptyings: counters.root_emptyings - counters_before.root_emptyings,
        root_entries_emptied: counters.root_entries_emptied - counters_before.root_entries_emptied,
        height: tree.root_level() + 1,
        reclamations: counters.reclaim.reclamations - counters_before.reclaim.reclamations,
        nodes_copied: counters.reclaim.nodes_copied - counters_before.reclaim.nodes_copied,
        erase_ns: counters.reclaim.erase_ns - counters_before.reclaim.erase_ns,
        wall_s: 0.0,
    };
    // Not measured: the structure is sound and holds exactly the live keys.
    let stats = tree.verify()?;
    assert!(stats.leaf_entries + stats.buffer_entries >= workload.live.len() as u64);
    Ok(Outcome { wall_s: started.elapsed().as_secs_f64(), ..outcome })
}

fn main() -> Result<()> {
    let args = Args::parse()?;
    let mut engines: Vec<Engine> = args.rules.iter().map(|&r| Engine::LaTree(r)).collect();
    engines.push(Engine::BTree);
    let mut outcomes = Vec::new();
    for &device in &args.profiles {
        for &ltu in &args.ltus {
            for &engine in &engines {
                let o = run(&args, device, engine, ltu)?;
                eprintln!(
                    "{:<12} {:<18} LTU {:>5}%: {:>9.1} us/op (stream {:>9.1}), {:>8.1} uJ/op, \
                     {} emptyings (mean {:.0}, max {}), height {}, {} reclamations \
                     ({:.1} us/op with erases), {:.1} s",
                    o.profile,
                    o.engine.label(),
                    o.ltu,
                    o.time_us(),
                    o.stream_us(),
                    o.energy_uj(),
                    o.emptyings,
                    o.mean_emptied(),
                    o.emptied_max,
                    o.height,
                    o.reclamations,
                    o.time_with_erases_us(),
                    o.wall_s
                );
                outcomes.push(o);
            }
        }
    }
    let tables = tables(&args, &outcomes);
    println!("{tables}");
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| Error::option("--out", e.to_string()))?;
        let write = |name: &str, text: &str| {
            std::fs::write(dir.join(name), text).map_err(|e| Error::option("--out", e.to_string()))
        };
        write("results.csv", &csv(&outcomes))?;
        write("tables.md", &tables)?;
        for path in plot::write_plots(&outcomes, dir)? {
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}

fn find<'a>(
    outcomes: &'a [Outcome],
    profile: &str,
    engine: Engine,
    ltu: u64,
) -> Option<&'a Outcome> {
    outcomes.iter().find(|o| o.profile == profile && o.engine == engine && o.ltu == ltu)
}

/// The markdown tables of `docs/results/latree.md`.
fn tables(args: &Args, outcomes: &[Outcome]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Preload {} keys, {} updates ({}% inserts), memory {} bytes, seed {}.\n",
        args.keys,
        args.updates,
        workload::INSERT_PERCENT,
        args.memory_bytes,
        args.seed
    );
    for &device in &args.profiles {
        let energy = device.energy().is_some();
        let _ = writeln!(s, "#### `{}`\n", device.name);
        let _ = write!(s, "| LTU | engine | us/op | us/op (stream) |");
        if energy {
            let _ = write!(s, " uJ/op |");
        }
        let _ = writeln!(
            s,
            " speedup vs btree | node reads/op | node writes/op | buffer pages w/op | buffer pages r/op | emptyings | height |"
        );
        let _ = write!(s, "| ---: | --- | ---: | ---: |");
        if energy {
            let _ = write!(s, " ---: |");
        }
        let _ = writeln!(s, " ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        for &ltu in &args.ltus {
            let btree = find(outcomes, device.name, Engine::BTree, ltu);
            for o in outcomes.iter().filter(|o| o.profile == device.name && o.ltu == ltu) {
                let speedup = btree.map_or(String::from("-"), |b| {
                    format!(
                        "{:.2}x ({:.2}x)",
                        b.time_us() / o.time_us(),
                        b.stream_us() / o.stream_us()
                    )
                });
                let _ = write!(
                    s,
                    "| {}% | {} | {:.1} | {:.1} |",
                    o.ltu,
                    o.engine.label(),
                    o.time_us(),
                    o.stream_us()
                );
                if energy {
                    let e = btree.map_or(String::new(), |b| {
                        format!(" ({:.2}x)", b.energy_uj() / o.energy_uj())
                    });
                    let _ = write!(s, " {:.1}{e} |", o.energy_uj());
                }
                let _ = writeln!(
                    s,
                    " {speedup} | {:.2} | {:.3} | {:.3} | {:.3} | {} | {} |",
                    o.per_op(o.node_reads),
                    o.per_op(o.node_writes),
                    o.per_op(o.buffer_pages_written),
                    o.per_op(o.buffer_pages_read),
                    o.emptyings,
                    o.height
                );
            }
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "#### Figure 6(b): buffer sizes at emptying (entries)\n");
    let _ =
        writeln!(s, "| profile | engine | LTU | emptyings | mean | root mean | lower mean | max |");
    let _ = writeln!(s, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for o in outcomes.iter().filter(|o| o.engine != Engine::BTree) {
        let _ = writeln!(
            s,
            "| {} | {} | {}% | {} | {:.0} | {:.0} | {:.0} | {} |",
            o.profile,
            o.engine.label(),
            o.ltu,
            o.emptyings,
            o.mean_emptied(),
            o.mean_root_emptied(),
            o.mean_lower_emptied(),
            o.emptied_max
        );
    }
    s
}

fn csv(outcomes: &[Outcome]) -> String {
    let mut s = String::from(
        "profile,engine,ltu_percent,ops,lookups,modeled_ns,stream_ns,energy_nj,node_reads,\
         node_writes,buffer_pages_written,buffer_pages_read,emptyings,entries_emptied,\
         emptied_entries_max,root_emptyings,root_entries_emptied,height,reclamations,\
         nodes_copied,erase_ns,wall_s\n",
    );
    for o in outcomes {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.1}",
            o.profile,
            o.engine.label(),
            o.ltu,
            o.ops,
            o.lookups,
            o.modeled_ns,
            o.stream_ns,
            o.energy_nj,
            o.node_reads,
            o.node_writes,
            o.buffer_pages_written,
            o.buffer_pages_read,
            o.emptyings,
            o.entries_emptied,
            o.emptied_max,
            o.root_emptyings,
            o.root_entries_emptied,
            o.height,
            o.reclamations,
            o.nodes_copied,
            o.erase_ns,
            o.wall_s
        );
    }
    s
}
