//! The store's conformance suite on DynamoDB: all of it on moto; on dynalite, which has no
//! TransactWriteItems or TransactGetItems, every workload that does not test transactions
//! (reads of several items fall back to one GetItem each there, see `DynamoBackend`).

use crate::{Dynamo, Flavor, endpoint};
use pathdb_conformance::{Harness, TestStore};
use pathdb_dynamodb::DynamoBackend;
use pathdb_store::StoreOptions;

/// Workloads that write or read several items atomically.
const NEED_TRANSACTIONS: &[&str] = &[
    "conditions",
    "racing_must_not_exist",
    "racing_transfers",
    "transaction_results",
    "failed_transactions_leave_nothing",
    "history_retention",
    "scan_and_import",
    // A put with a TTL writes its expiry-index entry in the same batch.
    "ttl_expiry",
    "versions_never_reused",
    "import_never_goes_backwards",
    "import_keeps_history_consistent",
    // Namespaces with history, and transactions refused whole.
    "namespace_definitions",
    "schema_checked_on_every_write",
    "history_setting_of_an_earlier_build",
    // An alias is written in its item's batch.
    "alias_paths",
    "alias_change_feeds",
    "aliases_against_a_model",
    "racing_for_aliases",
    "alias_builds",
    "alias_corner_cases",
];

/// The server named by the environment, if any.
struct FromEnv(Option<(Dynamo, Flavor)>);

impl FromEnv {
    fn new() -> FromEnv {
        FromEnv(endpoint().map(|(url, flavor)| (Dynamo::new(url), flavor)))
    }
}

impl Harness for FromEnv {
    type Backend = DynamoBackend;

    fn open(&self, options: StoreOptions) -> TestStore<DynamoBackend> {
        let (dynamo, _) = self
            .0
            .as_ref()
            .expect("skip() stops the workload without an endpoint");
        dynamo.open(options)
    }

    fn reopen(
        &self,
        store: TestStore<DynamoBackend>,
        options: StoreOptions,
    ) -> Option<TestStore<DynamoBackend>> {
        self.0.as_ref()?.0.reopen(store, options)
    }

    fn skip(&self, workload: &str) -> Option<String> {
        match &self.0 {
            None => Some("PATHDB_DYNAMODB_ENDPOINT is not set".into()),
            Some((_, Flavor::Dynalite)) if NEED_TRANSACTIONS.contains(&workload) => {
                Some("dynalite has no transactions".into())
            }
            Some(_) => None,
        }
    }
}

pathdb_conformance::conformance_tests!(FromEnv::new());
