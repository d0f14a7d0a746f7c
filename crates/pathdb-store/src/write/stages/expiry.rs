//! Stage: the expiry index. A put with an expiry time also writes an index entry (`00 01` + time +
//! item key, encoding/layout.rs), which the sweeper (write/sweep.rs) reads to find what expired.
//! Reads hide an expired item whether or not it was swept yet.

use crate::backend::{Reader, WriteOp};
use crate::encoding::layout;
use crate::encoding::record::index_record;
use crate::write::plan::{Context, Plan, Written};

/// Plans the index entry of the put in `written`, if it expires.
pub(crate) fn stage<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    plan: &mut Plan,
    written: &Written<'_>,
) {
    let expires_at = written
        .put
        .and_then(|(index, _)| plan.put_record(index))
        .and_then(|r| r.expires_at);
    let Some(expires_at) = expires_at else {
        return;
    };
    let entry = WriteOp::Put {
        key: layout::expiry_key(expires_at, &written.key),
        record: index_record(ctx.now),
        expect: None,
    };
    plan.push(entry, &written.path, written.fresh);
}
