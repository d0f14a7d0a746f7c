use super::*;
use crate::backend::{Key, Record};
use proptest::prelude::*;

fn backup(rows: &[(Vec<u8>, Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let info = BackupInfo {
        format: FORMAT,
        commit: Some(7),
        snapshot: true,
        taken_at: 1_700_000_000_000_000,
        database: Some(42),
        rows: 0,
        bytes: 0,
    };
    let mut writer = BackupWriter::new(Vec::new(), info).unwrap();
    for (partition, sort, value) in rows {
        let key = Key {
            partition: partition.clone(),
            sort: sort.clone(),
        };
        let record = Record {
            version: 1,
            created_at: 2,
            modified_at: 3,
            expires_at: None,
            value: value.clone(),
        };
        writer.row(&key, &record).unwrap();
    }
    writer.finish().unwrap().0
}

fn rows() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>> {
    proptest::collection::vec(
        (
            proptest::collection::vec(any::<u8>(), 0..4),
            proptest::collection::vec(any::<u8>(), 0..6),
            proptest::collection::vec(any::<u8>(), 0..20),
        ),
        0..6,
    )
}

proptest! {
    /// What is written reads back, header and rows.
    #[test]
    fn rows_round_trip(rows in rows()) {
        let bytes = backup(&rows);
        let info = verify("b", bytes.as_slice()).unwrap();
        prop_assert_eq!(info.commit, Some(7));
        prop_assert_eq!(info.database, Some(42));
        prop_assert_eq!(info.bytes, bytes.len() as u64);
        let mut read = Vec::new();
        let info = read_rows("b", bytes.as_slice(), |p, s, v| {
            read.push((p.to_vec(), s.to_vec(), decode_record(v).unwrap().value));
            Ok(())
        }).unwrap();
        prop_assert_eq!(info.rows, rows.len() as u64);
        prop_assert_eq!(read, rows);
    }

    /// A byte changed anywhere (to any other value) fails verification, naming the file.
    #[test]
    fn any_changed_byte_is_refused(rows in rows(), at in any::<prop::sample::Index>(), by in 1u8..=255) {
        let mut bytes = backup(&rows);
        let at = at.index(bytes.len());
        bytes[at] ^= by;
        let error = verify("the-file", bytes.as_slice()).unwrap_err();
        prop_assert!(error.to_string().starts_with("the-file: "), "{}", error);
    }

    /// Cut short or extended anywhere: refused.
    #[test]
    fn a_changed_length_is_refused(rows in rows(), cut in any::<prop::sample::Index>(), extra in proptest::collection::vec(any::<u8>(), 1..50)) {
        let bytes = backup(&rows);
        let cut = cut.index(bytes.len());
        prop_assert!(verify("f", &bytes[..cut]).is_err());
        let mut longer = bytes.clone();
        longer.extend_from_slice(&extra);
        prop_assert!(verify("f", longer.as_slice()).is_err());
    }
}
