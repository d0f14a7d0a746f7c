//! The start-up check: every PathDB write is a `TransactWriteItems` (the item and its change log
//! entry commit together, docs/changes.md), so an endpoint without it (dynalite, ScyllaDB
//! Alternator) could serve reads but would fail every write. [`DynamoBackend::connect`] finds
//! out at once, with one request that writes nothing: a transaction of a single
//! `ConditionCheck` that a key the store never writes is absent.
//!
//! DynamoDB and moto answer it with success (or `ResourceNotFoundException` before the table
//! exists, or a cancelled transaction should the key exist): the operation is there. An
//! endpoint without it answers `UnknownOperationException` (dynalite; Alternator names the
//! operation as unsupported), and the backend refuses it, naming `TransactWriteItems`.

use crate::retry::{self, Class};
use crate::{DynamoBackend, attrs};
use aws_sdk_dynamodb::types::{ConditionCheck, TransactWriteItem};
use pathdb_store::StorageError;
use pathdb_store::backend::Key;

/// A key in the store's system partition (`00`) under a sort-key prefix (`ff`) that the store
/// never uses there (layout.rs uses `01`..`05`). Were it ever written, the probe's condition
/// would fail, which still proves that the operation exists.
fn probe_key() -> Key {
    Key {
        partition: vec![0x00],
        sort: b"\xffpathdb: TransactWriteItems probe, never written".to_vec(),
    }
}

/// Whether an answer says that the endpoint does not implement the operation: dynalite and
/// Alternator answer `UnknownOperationException` (Alternator's message: "Unsupported operation
/// TransactWriteItems"); the text is a fallback for an endpoint that words it as a validation
/// error.
fn unsupported(code: Option<&str>, message: &str) -> bool {
    code == Some("UnknownOperationException")
        || message
            .to_ascii_lowercase()
            .contains("unsupported operation")
}

impl DynamoBackend {
    /// Refuses an endpoint that has no `TransactWriteItems` (module docs).
    pub(crate) async fn check_transactions(&self) -> Result<(), StorageError> {
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(attrs::key(&probe_key())))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(|e| StorageError::new("building the TransactWriteItems probe", e))?;
        let request = self
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().condition_check(check).build());
        // Writes nothing, so it may be sent again like a read.
        let result = retry::read(&self.retry, &self.metrics, "TransactWriteItems", || {
            let request = request.clone();
            async move {
                request
                    .send()
                    .await
                    .map_err(|e| retry::classify("TransactWriteItems", e))
            }
        })
        .await;
        match result {
            Ok(_) => Ok(()),
            Err(failure) if unsupported(failure.code.as_deref(), failure.error.message()) => {
                Err(StorageError::msg(format!(
                    "this DynamoDB endpoint does not implement TransactWriteItems, which PathDB \
                     needs: every write commits its item and its change log entry in one \
                     transaction. Use DynamoDB (or moto for tests); dynalite and ScyllaDB \
                     Alternator lack it. The endpoint answered: {}",
                    failure.error.message()
                )))
            }
            // Any other refusal (a missing table, a cancelled transaction) comes from an
            // endpoint that knows the operation; the table itself is checked when the store
            // opens.
            Err(failure) if failure.class == Class::Rejected => Ok(()),
            Err(failure) => Err(failure
                .error
                .context("checking that the endpoint implements TransactWriteItems")),
        }
    }
}
