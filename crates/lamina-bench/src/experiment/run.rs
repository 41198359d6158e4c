//! Runs an experiment's phases, one `run_bench` comparison each, on the same engines.

use lamina_core::Result;

use super::{
    Experiment, Phase, PhaseRole, aggregate,
    report::{ExperimentReport, phase_failures},
    scale::{ScaleTable, run_scale},
};
use crate::{
    BenchConfig, BenchOutcome, EngineFactory, run_bench,
    runner::{RunConfig, RunnerKind},
};

/// What the command line fixed besides the experiment's own settings.
#[derive(Debug, Clone)]
pub struct ExperimentRequest {
    /// The experiment.
    pub experiment: Experiment,
    /// Its phases (from [`Experiment::phases`]).
    pub phases: Vec<Phase>,
    /// Engines, rounds, engine parameters, directory, run timing and progress. Its
    /// `workload`, request counts and (unless `runner_override`) runner are replaced per
    /// phase; its durability is replaced where the phase fixes one.
    pub base: BenchConfig,
    /// A runner the command line chose (`--threads`, `--readers/--writers`), used in every
    /// phase instead of the experiment's thread count.
    pub runner_override: Option<RunnerKind>,
    /// `--engines` given explicitly (else the experiment's selection).
    pub engines_given: bool,
    /// The command line, for the report.
    pub command: String,
}

/// Every phase's outcome and the experiment's report.
#[derive(Debug)]
pub struct ExperimentOutcome {
    /// The report (JSON and markdown).
    pub report: ExperimentReport,
    /// Each phase's outcome (for its own plots), in phase order.
    pub phases: Vec<(Phase, BenchOutcome)>,
}

/// The configuration of `phase` within `request`, for `engines`.
pub fn phase_config(request: &ExperimentRequest, phase: &Phase, engines: &[String]) -> BenchConfig {
    let mut config = request.base.clone();
    config.engines = engines.to_vec();
    config.workload = phase.workload.clone();
    config.run = RunConfig {
        runner: request.runner_override.unwrap_or(phase.runner),
        ops: Some(phase.ops),
        duration: None,
        warmup_ops: phase.warmup_ops,
        bucket_ops: phase.bucket_ops,
        ..request.base.run.clone()
    };
    if let Some(durability) = phase.durability {
        config.engine_params.durability = durability;
    }
    // `run_bench` wants each engine's directory empty: one subdirectory per phase.
    config.dir = request.base.dir.as_ref().map(|d| d.join(&phase.name));
    config
}

/// Runs every phase of `request` against `factory`'s engines. `note` receives one-line
/// remarks (engines the build lacks, skipped engines) as they happen.
pub fn run_experiment(
    factory: &dyn EngineFactory,
    request: &ExperimentRequest,
    note: &mut dyn FnMut(&str),
) -> Result<ExperimentOutcome> {
    let offered: Vec<String> = factory.engines().into_iter().map(|e| e.name).collect();
    let (engines, missing) = if request.engines_given {
        (request.base.engines.clone(), Vec::new())
    } else {
        let selection = request.experiment.select_engines(&offered);
        (selection.engines, selection.missing)
    };
    for (engine, reason) in &missing {
        note(&format!("{}: skipping engine {engine}: {reason}", request.experiment));
    }
    let mut phases = Vec::new();
    let mut scale = None;
    let failed;
    if request.experiment.shares_store() {
        let run = run_scale(factory, request, &engines, note)?;
        let [insert, lookup, concurrent] = [0, 1, 2].map(|i| &run.phases[i].1.report);
        scale = Some(ScaleTable::new([insert, lookup, concurrent], run.extras, &run.failed));
        phases = run.phases;
        failed = run.failed;
    } else {
        for phase in &request.phases {
            note(&format!("{}: phase {}", request.experiment, phase.name));
            let config = phase_config(request, phase, &engines);
            let outcome = run_bench(factory, &config, note)?;
            phases.push((phase.clone(), outcome));
        }
        failed = phase_failures(phases.iter().map(|(p, o)| (p.name.as_str(), &o.report)));
    }
    let insert_steps = phases.iter().find_map(|(p, o)| match p.role {
        PhaseRole::InsertSteps { steps } => Some(aggregate::step_table(&o.report, steps)),
        _ => None,
    });
    let series = aggregate::series(phases.iter().map(|(p, o)| (p.role, &o.report)));
    let report =
        ExperimentReport::new(request, missing, &phases, insert_steps, series, failed, scale);
    Ok(ExperimentOutcome { report, phases })
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values built from exact inputs
mod tests {
    use std::time::Duration;

    use lamina_core::Durability;

    use super::*;
    use crate::{EngineParams, experiment::Scale};

    fn request(experiment: Experiment) -> ExperimentRequest {
        let phases = experiment.phases(1, Scale::default()).unwrap();
        let first = &phases[0];
        ExperimentRequest {
            experiment,
            base: BenchConfig {
                engines: vec!["mem".into()],
                rounds: 1,
                workload: first.workload.clone(),
                run: RunConfig {
                    runner: RunnerKind::Closed { threads: 1 },
                    ops: Some(1),
                    duration: None,
                    warmup_ops: 0,
                    bucket_ops: 1,
                    interval: Duration::from_millis(100),
                    progress: false,
                },
                engine_params: EngineParams::default(),
                dir: Some("/tmp/x".into()),
                keep: false,
            },
            phases,
            runner_override: None,
            engines_given: false,
            command: "lamina bench".into(),
        }
    }

    #[test]
    fn phase_configs_take_the_phase_settings_and_a_directory_each() {
        let r = request(Experiment::Contest);
        let c = phase_config(&r, &r.phases[0], &["bdb".to_string()]);
        assert_eq!(c.engines, vec!["bdb".to_string()]);
        assert_eq!(c.run.runner, RunnerKind::Closed { threads: 32 });
        assert_eq!(c.engine_params.durability, Durability::Sync);
        assert_eq!(c.run.ops, Some(r.phases[0].ops));
        assert_eq!(c.dir.as_deref(), Some(std::path::Path::new("/tmp/x/contest")));
        let mut r = request(Experiment::FdfcVsBtree);
        r.runner_override = Some(RunnerKind::Closed { threads: 2 });
        let c = phase_config(&r, &r.phases[4], &[]);
        assert_eq!(c.run.runner, RunnerKind::Closed { threads: 2 });
        assert_eq!(c.engine_params.durability, Durability::None);
        assert_eq!(c.workload.mix.normalized(), [1.0, 0.0, 0.0]);
        assert!(c.dir.unwrap().ends_with("wl-1.0"));
    }
}
