//! The kinds of native handle the ledger counts.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

/// A kind of native handle. The built-in kinds cover every RocksDB handle the tracked wrappers
/// make; [`HandleKind::Other`] serves users who track another library's (or another binding's)
/// handles with the core alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum HandleKind {
    /// An open database (`rocksdb_t`).
    Db,
    /// A column family handle owned by a DB (`rocksdb_column_family_handle_t`).
    ColumnFamily,
    /// A user-held reference to a column family of a multi-threaded DB (`Arc<BoundColumnFamily>`).
    BoundColumnFamily,
    /// A column family descriptor (a name and the options it owns).
    ColumnFamilyDescriptor,
    /// `Options` (`rocksdb_options_t`).
    Options,
    /// `BlockBasedOptions` (`rocksdb_block_based_table_options_t`).
    BlockBasedOptions,
    /// A block or row cache (`rocksdb_cache_t`).
    Cache,
    /// A write buffer manager (`rocksdb_write_buffer_manager_t`).
    WriteBufferManager,
    /// An environment (`rocksdb_env_t`).
    Env,
    /// `ReadOptions`.
    ReadOptions,
    /// `WriteOptions`.
    WriteOptions,
    /// A write batch.
    WriteBatch,
    /// A `DBIterator`.
    Iterator,
    /// A `DBRawIterator`.
    RawIterator,
    /// A snapshot.
    Snapshot,
    /// A checkpoint object.
    Checkpoint,
    /// An SST file writer.
    SstFileWriter,
    /// An open transaction database (`rocksdb_transactiondb_t`).
    TransactionDb,
    /// A transaction (`rocksdb_transaction_t`): it pins a snapshot and holds its keys' locks.
    Transaction,
    /// `TransactionDBOptions`.
    TransactionDbOptions,
    /// `TransactionOptions`.
    TransactionOptions,
    /// A backup engine (`rocksdb_backup_engine_t`): it keeps an environment and open files.
    BackupEngine,
    /// `BackupEngineOptions`.
    BackupEngineOptions,
    /// `RestoreOptions`.
    RestoreOptions,
    /// An open optimistic transaction database (`rocksdb_optimistictransactiondb_t` and the base
    /// DB it wraps).
    OptimisticTransactionDb,
    /// `OptimisticTransactionOptions`.
    OptimisticTransactionOptions,
    /// A handle of a kind the built-ins do not cover, named by the user.
    Other(&'static str),
}

impl HandleKind {
    /// Every built-in kind, in a stable order.
    pub(crate) const BUILTIN: [HandleKind; 26] = [
        HandleKind::Db,
        HandleKind::ColumnFamily,
        HandleKind::BoundColumnFamily,
        HandleKind::ColumnFamilyDescriptor,
        HandleKind::Options,
        HandleKind::BlockBasedOptions,
        HandleKind::Cache,
        HandleKind::WriteBufferManager,
        HandleKind::Env,
        HandleKind::ReadOptions,
        HandleKind::WriteOptions,
        HandleKind::WriteBatch,
        HandleKind::Iterator,
        HandleKind::RawIterator,
        HandleKind::Snapshot,
        HandleKind::Checkpoint,
        HandleKind::SstFileWriter,
        HandleKind::TransactionDb,
        HandleKind::Transaction,
        HandleKind::TransactionDbOptions,
        HandleKind::TransactionOptions,
        HandleKind::BackupEngine,
        HandleKind::BackupEngineOptions,
        HandleKind::RestoreOptions,
        HandleKind::OptimisticTransactionDb,
        HandleKind::OptimisticTransactionOptions,
    ];

    /// The kind's name as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            HandleKind::Db => "DB",
            HandleKind::ColumnFamily => "ColumnFamily",
            HandleKind::BoundColumnFamily => "BoundColumnFamily",
            HandleKind::ColumnFamilyDescriptor => "ColumnFamilyDescriptor",
            HandleKind::Options => "Options",
            HandleKind::BlockBasedOptions => "BlockBasedOptions",
            HandleKind::Cache => "Cache",
            HandleKind::WriteBufferManager => "WriteBufferManager",
            HandleKind::Env => "Env",
            HandleKind::ReadOptions => "ReadOptions",
            HandleKind::WriteOptions => "WriteOptions",
            HandleKind::WriteBatch => "WriteBatch",
            HandleKind::Iterator => "Iterator",
            HandleKind::RawIterator => "RawIterator",
            HandleKind::Snapshot => "Snapshot",
            HandleKind::Checkpoint => "Checkpoint",
            HandleKind::SstFileWriter => "SstFileWriter",
            HandleKind::TransactionDb => "TransactionDB",
            HandleKind::Transaction => "Transaction",
            HandleKind::TransactionDbOptions => "TransactionDBOptions",
            HandleKind::TransactionOptions => "TransactionOptions",
            HandleKind::BackupEngine => "BackupEngine",
            HandleKind::BackupEngineOptions => "BackupEngineOptions",
            HandleKind::RestoreOptions => "RestoreOptions",
            HandleKind::OptimisticTransactionDb => "OptimisticTransactionDB",
            HandleKind::OptimisticTransactionOptions => "OptimisticTransactionOptions",
            HandleKind::Other(name) => name,
        }
    }

    /// The built-in kind of this name, as [`HandleKind::name`] spells it.
    pub(crate) fn builtin_named(name: &str) -> Option<HandleKind> {
        HandleKind::BUILTIN.into_iter().find(|k| k.name() == name)
    }

    /// Index into the ledger's fixed counter table, for built-in kinds.
    pub(crate) fn builtin_index(self) -> Option<usize> {
        Some(match self {
            HandleKind::Db => 0,
            HandleKind::ColumnFamily => 1,
            HandleKind::BoundColumnFamily => 2,
            HandleKind::ColumnFamilyDescriptor => 3,
            HandleKind::Options => 4,
            HandleKind::BlockBasedOptions => 5,
            HandleKind::Cache => 6,
            HandleKind::WriteBufferManager => 7,
            HandleKind::Env => 8,
            HandleKind::ReadOptions => 9,
            HandleKind::WriteOptions => 10,
            HandleKind::WriteBatch => 11,
            HandleKind::Iterator => 12,
            HandleKind::RawIterator => 13,
            HandleKind::Snapshot => 14,
            HandleKind::Checkpoint => 15,
            HandleKind::SstFileWriter => 16,
            HandleKind::TransactionDb => 17,
            HandleKind::Transaction => 18,
            HandleKind::TransactionDbOptions => 19,
            HandleKind::TransactionOptions => 20,
            HandleKind::BackupEngine => 21,
            HandleKind::BackupEngineOptions => 22,
            HandleKind::RestoreOptions => 23,
            HandleKind::OptimisticTransactionDb => 24,
            HandleKind::OptimisticTransactionOptions => 25,
            HandleKind::Other(_) => return None,
        })
    }
}

impl fmt::Display for HandleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl Serialize for HandleKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A handle kind as a report holds it. A report read back from JSON knows a user's
/// [`HandleKind::Other`] kind by its name alone, so such kinds are kept as owned names; built-in
/// kinds stay typed. Serialized as the kind's name, so the JSON is what it always was.
///
/// ```
/// use leakcheck::{HandleKind, KindName};
/// assert_eq!(KindName::from(HandleKind::Cache), HandleKind::Cache);
/// assert_eq!(KindName::from("Cache".to_string()), HandleKind::Cache);
/// assert_eq!(KindName::from(HandleKind::Other("socket")), HandleKind::Other("socket"));
/// assert_eq!(KindName::from(HandleKind::Other("socket")).to_string(), "socket");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum KindName {
    /// One of `HandleKind::BUILTIN`.
    Builtin(HandleKind),
    /// A kind the built-ins do not cover, by its name.
    Other(String),
}

impl KindName {
    /// The kind's name as reports print it.
    pub fn as_str(&self) -> &str {
        match self {
            KindName::Builtin(k) => k.name(),
            KindName::Other(name) => name,
        }
    }
}

impl From<HandleKind> for KindName {
    fn from(kind: HandleKind) -> Self {
        match kind {
            HandleKind::Other(name) => KindName::Other(name.to_string()),
            builtin => KindName::Builtin(builtin),
        }
    }
}

impl From<String> for KindName {
    fn from(name: String) -> Self {
        match HandleKind::builtin_named(&name) {
            Some(k) => KindName::Builtin(k),
            None => KindName::Other(name),
        }
    }
}

impl From<KindName> for String {
    fn from(kind: KindName) -> Self {
        match kind {
            KindName::Builtin(k) => k.name().to_string(),
            KindName::Other(name) => name,
        }
    }
}

impl PartialEq<HandleKind> for KindName {
    fn eq(&self, other: &HandleKind) -> bool {
        match (self, other) {
            (KindName::Other(name), HandleKind::Other(theirs)) => name == theirs,
            (KindName::Builtin(k), other) => k == other,
            (KindName::Other(_), _) => false,
        }
    }
}

impl fmt::Display for KindName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_indices_match_the_table_order() {
        for (i, kind) in HandleKind::BUILTIN.iter().enumerate() {
            assert_eq!(kind.builtin_index(), Some(i), "{kind}");
        }
        assert_eq!(HandleKind::Other("x").builtin_index(), None);
    }

    #[test]
    fn kind_names_round_trip_through_json() {
        for kind in HandleKind::BUILTIN.into_iter().chain([HandleKind::Other("socket")]) {
            let json = serde_json::to_string(&KindName::from(kind)).expect("serialize");
            assert_eq!(json, format!("\"{}\"", kind.name()));
            let back: KindName = serde_json::from_str(&json).expect("deserialize");
            assert_eq!(back, kind, "{json}");
            assert_eq!(back, KindName::from(kind));
        }
        assert_ne!(KindName::from(HandleKind::Other("DBx")), HandleKind::Db);
        assert_ne!(KindName::from(HandleKind::Db), HandleKind::Other("DB"));
    }
}
