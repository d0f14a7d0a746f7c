//! Creating the table: Binary `pk` (HASH) and `sk` (RANGE), on-demand billing. No DynamoDB TTL:
//! expiry is the store's (it leaves a tombstone that keeps the path's last version).

use crate::{DynamoBackend, retry};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
};
use pathdb_store::StorageError;
use std::time::Duration;

/// Creates the backend's table if it does not exist and waits until it is active.
/// Returns whether it created the table.
///
/// # Errors
/// The request fails (credentials, endpoint, permissions).
pub fn create_table(backend: &DynamoBackend) -> Result<bool, StorageError> {
    backend.block_on(async {
        let client = backend.client();
        let table = backend.table_name();
        let build =
            |e: aws_sdk_dynamodb::error::BuildError| StorageError::new("building CreateTable", e);
        let attribute = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::B)
                .build()
                .map_err(build)
        };
        let element = |name: &str, kind| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
                .map_err(build)
        };
        let request = client
            .create_table()
            .table_name(table)
            .attribute_definitions(attribute("pk")?)
            .attribute_definitions(attribute("sk")?)
            .key_schema(element("pk", KeyType::Hash)?)
            .key_schema(element("sk", KeyType::Range)?)
            .billing_mode(BillingMode::PayPerRequest);
        // Sent again like a read: a second attempt after a lost answer finds the table made by
        // the first (ResourceInUseException), and reports it as already there.
        let created = match retry::read(&backend.retry, &backend.metrics, "CreateTable", || {
            let request = request.clone();
            async move {
                request
                    .send()
                    .await
                    .map_err(|e| retry::classify("CreateTable", e))
            }
        })
        .await
        {
            Ok(_) => true,
            Err(failure) if failure.code.as_deref() == Some("ResourceInUseException") => false,
            Err(failure) => return Err(failure.error.context(format!("table {table}"))),
        };
        for _ in 0..600 {
            let request = client.describe_table().table_name(table);
            let described = retry::read(&backend.retry, &backend.metrics, "DescribeTable", || {
                let request = request.clone();
                async move {
                    request
                        .send()
                        .await
                        .map_err(|e| retry::classify("DescribeTable", e))
                }
            })
            .await
            .map_err(|failure| failure.error.context(format!("table {table}")))?;
            if described.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(created)
    })
}

/// Deletes the backend's table and everything in it (`pathdb bench dynamodb-cost` removes the
/// table it made).
///
/// # Errors
/// The request fails (credentials, endpoint, permissions, no such table).
pub fn delete_table(backend: &DynamoBackend) -> Result<(), StorageError> {
    backend.block_on(async {
        let table = backend.table_name();
        let request = backend.client().delete_table().table_name(table);
        retry::read(&backend.retry, &backend.metrics, "DeleteTable", || {
            let request = request.clone();
            async move {
                request
                    .send()
                    .await
                    .map_err(|e| retry::classify("DeleteTable", e))
            }
        })
        .await
        .map(drop)
        .map_err(|failure| failure.error.context(format!("table {table}")))
    })
}
