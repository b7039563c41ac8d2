//! pprof's profile schema (`perftools.profiles`, profile.proto in github.com/google/pprof), the
//! messages and fields leakcheck writes, declared for prost, which does the wire format: encoding
//! here, decoding in the tests and in any reader of the schema (`go tool pprof`, speedscope).
//! Field numbers and types are the schema's; fields leakcheck does not write are left out (a
//! decoder skips what it does not know, and prost reads a full profile with these too).

/// A profile: sample types, samples, and the tables they refer to by id.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Profile {
    /// What each of a sample's values is.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// Locations by id (`Sample::location_id`).
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Functions by id (`Line::function_id`).
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string, by index; index 0 is the empty string.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// What the sampling period counts.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// The sampling period (bytes between samples, on average).
    #[prost(int64, tag = "12")]
    pub period: i64,
}

/// A value's type and unit, as indices into the string table.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub(super) struct ValueType {
    /// `inuse_space`, ...
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// `bytes`, ...
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// One stack and its values (one per sample type).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Sample {
    /// The stack's locations, innermost first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// Its values, in the order of the profile's sample types.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
}

/// An address and the lines it stands for (inlined functions first, their caller last).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Location {
    /// Its id (from 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The instruction address.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// The lines, innermost (inlined) first.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// A function and line at a location.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub(super) struct Line {
    /// The function's id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// The source line (0: unknown).
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// A function, its names and file as indices into the string table.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub(super) struct Function {
    /// Its id (from 1).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The name shown (demangled).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// The name as the system knows it.
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// The source file.
    #[prost(int64, tag = "4")]
    pub filename: i64,
}
