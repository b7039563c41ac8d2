//! Compile-time checks: each tracked wrapper is `Send` / `Sync` exactly when the rust-rocksdb type
//! it wraps is. This file compiles only if that holds.
#![cfg(feature = "rocksdb")]
// Names the raw types on purpose: they are what the wrappers are compared with.
#![allow(clippy::disallowed_types)]

use std::marker::PhantomData;

use leakcheck::tracked::*;
use rocksdb::{MultiThreaded, SingleThreaded};

struct Is<T: ?Sized>(PhantomData<T>);
trait NotSend {
    const SEND: bool = false;
}
impl<T: ?Sized> NotSend for Is<T> {}
#[allow(dead_code)]
impl<T: ?Sized + Send> Is<T> {
    const SEND: bool = true;
}
#[allow(dead_code)]
struct IsSync<T: ?Sized>(PhantomData<T>);
trait NotSync2 {
    const SYNC: bool = false;
}
impl<T: ?Sized> NotSync2 for IsSync<T> {}
#[allow(dead_code)]
impl<T: ?Sized + Sync> IsSync<T> {
    const SYNC: bool = true;
}

macro_rules! same_auto_traits {
    ($tracked:ty, $raw:ty) => {
        const _: () =
            assert!(Is::<$tracked>::SEND == Is::<$raw>::SEND, concat!("Send differs: ", stringify!($tracked)));
        const _: () =
            assert!(IsSync::<$tracked>::SYNC == IsSync::<$raw>::SYNC, concat!("Sync differs: ", stringify!($tracked)));
    };
}

type Db<T> = rocksdb::DBWithThreadMode<T>;

same_auto_traits!(TrackedOptions, rocksdb::Options);
same_auto_traits!(TrackedBlockBasedOptions, rocksdb::BlockBasedOptions);
same_auto_traits!(TrackedCache, rocksdb::Cache);
same_auto_traits!(TrackedWriteBufferManager, rocksdb::WriteBufferManager);
same_auto_traits!(TrackedEnv, rocksdb::Env);
same_auto_traits!(TrackedReadOptions, rocksdb::ReadOptions);
same_auto_traits!(TrackedWriteOptions, rocksdb::WriteOptions);
same_auto_traits!(TrackedWriteBatch, rocksdb::WriteBatch);
same_auto_traits!(TrackedWriteBatch<true>, rocksdb::WriteBatchWithTransaction<true>);
same_auto_traits!(TrackedCfDescriptor, rocksdb::ColumnFamilyDescriptor);
same_auto_traits!(TrackedDb<SingleThreaded>, Db<SingleThreaded>);
same_auto_traits!(TrackedDb<MultiThreaded>, Db<MultiThreaded>);
same_auto_traits!(TrackedBoundCf<'static>, std::sync::Arc<rocksdb::BoundColumnFamily<'static>>);
same_auto_traits!(
    TrackedIterator<'static, Db<SingleThreaded>>,
    rocksdb::DBIteratorWithThreadMode<'static, Db<SingleThreaded>>
);
same_auto_traits!(
    TrackedRawIterator<'static, Db<SingleThreaded>>,
    rocksdb::DBRawIteratorWithThreadMode<'static, Db<SingleThreaded>>
);
same_auto_traits!(
    TrackedSnapshot<'static, Db<SingleThreaded>>,
    rocksdb::SnapshotWithThreadMode<'static, Db<SingleThreaded>>
);
same_auto_traits!(TrackedCheckpoint<'static>, rocksdb::checkpoint::Checkpoint<'static>);
same_auto_traits!(TrackedSstFileWriter<'static>, rocksdb::SstFileWriter<'static>);
type TxnDb = rocksdb::TransactionDB<SingleThreaded>;
same_auto_traits!(TrackedTransactionDb<SingleThreaded>, TxnDb);
same_auto_traits!(TrackedTransactionDb<MultiThreaded>, rocksdb::TransactionDB<MultiThreaded>);
same_auto_traits!(TrackedTransaction<'static, TxnDb>, rocksdb::Transaction<'static, TxnDb>);
same_auto_traits!(TrackedTransactionDbOptions, rocksdb::TransactionDBOptions);
same_auto_traits!(TrackedTransactionOptions, rocksdb::TransactionOptions);
same_auto_traits!(TrackedTransactionDbCheckpoint<'static>, rocksdb::checkpoint::TransactionDBCheckpoint<'static>);
same_auto_traits!(TrackedBackupEngine, rocksdb::backup::BackupEngine);
same_auto_traits!(TrackedBackupEngineOptions, rocksdb::backup::BackupEngineOptions);
same_auto_traits!(TrackedRestoreOptions, rocksdb::backup::RestoreOptions);
type OptDb = rocksdb::OptimisticTransactionDB<SingleThreaded>;
same_auto_traits!(TrackedOptimisticTransactionDb<SingleThreaded>, OptDb);
same_auto_traits!(TrackedOptimisticTransactionDb<MultiThreaded>, rocksdb::OptimisticTransactionDB<MultiThreaded>);
same_auto_traits!(TrackedTransaction<'static, OptDb>, rocksdb::Transaction<'static, OptDb>);
same_auto_traits!(TrackedOptimisticTransactionOptions, rocksdb::OptimisticTransactionOptions);

#[test]
fn auto_traits_match_the_wrapped_types() {
    // The checks are the `const` items above: this file compiles only if they hold. Print the
    // table so a reader of the test log sees what was compared.
    println!("Options Send={} Sync={}", Is::<TrackedOptions>::SEND, IsSync::<TrackedOptions>::SYNC);
    println!("Iterator Send={}", Is::<TrackedIterator<'static, Db<SingleThreaded>>>::SEND);
}
