//! The macro that instantiates the kit for one engine.

/// Generates one `#[test]` per conformance case inside a module `conformance`.
///
/// `$make` is an expression that yields a fresh [`crate::testkit::Subject`]; it is
/// evaluated once per case (and once per generated program in the model-based cases).
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        mod conformance {
            #[allow(unused_imports)]
            use super::*;
            use $crate::testkit as kit;

            fn make() -> impl kit::Subject { $make }

            $crate::conformance_tests!(@cases make;
                basic_put_get_overwrite_delete,
                edge_case_keys_and_values,
                prefix_keys_are_distinct,
                empty_key_is_a_key,
                empty_key_survives_reopen_and_crash,
                refused_input_changes_nothing,
                closed_handle_refuses_calls,
                stats_name_the_engine,
                scan_bounds_and_limits,
                scan_across_overwrites_and_deletes,
                scan_limit_zero_and_over_max,
                scan_rev_bounds_and_limits,
                prefix_scans_forward_and_reverse,
                cas_semantics,
                cas_concurrent_increment,
                batch_applies_in_order,
                batch_is_all_or_nothing_on_bad_input,
                batch_is_atomic_to_readers,
                large_batch_survives_reopen_and_crash,
                model_random_sequences,
                concurrent_disjoint_writers,
                concurrent_shared_key_writers,
                scan_during_writes_keeps_its_guarantee,
                reopen_keeps_everything,
                reopen_after_many_overwrites,
                crash_keeps_acknowledged_writes,
            );
        }
    };
    (@cases $make:ident; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                kit::$case(&$make);
            }
        )*
    };
}
