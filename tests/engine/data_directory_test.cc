// What the engine finds in its data directory before RocksDB may change it
// (engine/internal/data_directory.h). Each case was found from outside by
// session 39 against the real binary:
// - a directory that lost CURRENT was opened as a new, empty database, and
//   RocksDB deleted the old table files as obsolete: every row gone, exit 0;
// - another program's RocksDB database was adopted (column families added),
//   after which its owner could no longer open it;
// - nothing on disk said which format a directory holds, so a newer one
//   could not be refused;
// - a storage.path that is a file was reported as "in use by another process".
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/internal/data_directory.h"
#include "testing/temp_dir.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

namespace fs = std::filesystem;

// The directory's files with their sizes, to prove a refusal changed nothing.
std::string Listing(const std::string& dir) {
  std::vector<std::string> lines;
  for (const auto& e : fs::directory_iterator(dir)) {
    lines.push_back(e.path().filename().string() + " " +
                    (e.is_regular_file() ? std::to_string(e.file_size()) : "dir"));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

EngineOptions Options() {
  EngineOptions o;
  o.durability = Durability::kOs;
  return o;
}

// A sidetable directory with a table of three rows, closed twice so the rows
// are in table files (the second open flushes the recovered WAL).
void MakeSidetableDirectory(const std::string& path, std::string* state) {
  {
    auto e = Engine::Open(Options(), path);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_TRUE((*e)->CreateTable("Orders", "test").ok());
    for (int i = 0; i < 3; i++) {
      Batch b("Orders");
      b.Insert(MakeEntity("p", "r" + std::to_string(i), i));
      ASSERT_TRUE((*e)->Execute(b).ok());
    }
  }
  auto e = Engine::Open(Options(), path);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  *state = DumpState(**e);
}

// 50 more rows, in the WAL only (the engine closes without a flush).
void AddRowsToTheWal(const std::string& path, std::string* state) {
  auto e = Engine::Open(Options(), path);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Batch b("Orders");
  for (int i = 0; i < 50; i++) b.Insert(MakeEntity("q", "r" + std::to_string(i), i));
  ASSERT_TRUE((*e)->Execute(b).ok());
  *state = DumpState(**e);
}

// Bytes in write-ahead logs: what an open would replay.
uintmax_t WalBytes(const std::string& dir) {
  uintmax_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".log") n += e.file_size();
  }
  return n;
}

bool HasSstFile(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".sst") return true;
  }
  return false;
}

std::string FormatFile(const std::string& db) { return db + "/" + internal::kFormatFileName; }

std::string ReadText(const std::string& file) {
  std::ifstream in(file);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// What a newer build does to raise the format: its file first, then its mark.
void WriteFormatFile(const std::string& db, const std::string& text) {
  std::ofstream(FormatFile(db), std::ios::trunc) << text;
}

// Only files named as RocksDB names them (a file number) mean a database was
// there: an operator's own files in a new directory do not stop the start.
TEST(DataDirectoryTest, OtherFilesInANewDirectoryAreNotTakenForADatabase) {
  TempDir dir;
  const std::string path = dir.Sub("db");
  fs::create_directories(path);
  for (const char* name : {"sidetable.log", "backup.sst", "MANIFEST-notes", "README"}) {
    std::ofstream(path + "/" + name) << "an operator's file\n";
  }
  auto e = Engine::Open(Options(), path);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE((*e)->CreateTable("Orders", "test").ok());
  e->reset();
  // A file numbered as RocksDB numbers its WAL, without CURRENT, still is.
  TempDir other;
  const std::string damaged = other.Sub("db");
  fs::create_directories(damaged);
  std::ofstream(damaged + "/000004.log") << "x";
  auto refused = Engine::Open(Options(), damaged);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("000004.log"), std::string::npos)
      << refused.status().ToString();
}

TEST(DataDirectoryTest, ALostCurrentFileIsRefusedAndTheTableFilesKept) {
  TempDir dir;
  const std::string path = dir.Sub("db");
  std::string before;
  MakeSidetableDirectory(path, &before);
  ASSERT_TRUE(HasSstFile(path));
  const std::string current = path + "/CURRENT";
  fs::copy_file(current, dir.Sub("CURRENT.saved"));
  fs::remove(current);
  // Without a WAL as well, RocksDB itself raised nothing: it created a new
  // database and purged the old table files.
  for (const auto& e : fs::directory_iterator(path)) {
    if (e.path().extension() == ".log") fs::remove(e.path());
  }
  const std::string files = Listing(path);

  for (int attempt = 0; attempt < 2; attempt++) {  // a supervisor's restart too
    auto e = Engine::Open(Options(), path);
    ASSERT_FALSE(e.ok()) << "a directory without CURRENT was opened";
    EXPECT_EQ(e.status().code(), Code::kUnavailable);
    EXPECT_NE(e.status().message().find("but no CURRENT file"), std::string::npos)
        << e.status().ToString();
    EXPECT_EQ(Listing(path), files) << "nothing in the directory changed";
  }

  fs::copy_file(dir.Sub("CURRENT.saved"), current);
  auto e = Engine::Open(Options(), path);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(DumpState(**e), before) << "every row is still there";
}

TEST(DataDirectoryTest, AnEmptyOrMissingDirectoryIsStillCreated) {
  TempDir dir;
  fs::create_directories(dir.Sub("empty"));
  // storage.path is "created if missing", parents included (RocksDB makes
  // only the last component: "no such directory").
  for (const std::string path :
       {dir.Sub("empty"), dir.Sub("missing"), dir.Sub("no/such/parents/db")}) {
    auto e = Engine::Open(Options(), path);
    ASSERT_TRUE(e.ok()) << path << ": " << e.status().ToString();
  }
}

TEST(DataDirectoryTest, AnotherProgramsRocksDbIsRefusedAndLeftAlone) {
  TempDir dir;
  const std::string path = dir.Sub("other");
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, path, &raw).ok());
    ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), "their-key", "their-value").ok());
    delete raw;
  }
  const std::string files = Listing(path);

  auto e = Engine::Open(Options(), path);
  ASSERT_FALSE(e.ok()) << "another program's database was opened";
  EXPECT_EQ(e.status().code(), Code::kUnavailable);
  EXPECT_NE(e.status().message().find("not a sidetable one"), std::string::npos)
      << e.status().ToString();
  EXPECT_EQ(Listing(path), files);

  // Its owner opens it as before: no column family was added.
  std::vector<std::string> families;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &families).ok());
  EXPECT_EQ(families, std::vector<std::string>{rocksdb::kDefaultColumnFamilyName});
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), path, &raw).ok());
  std::string value;
  EXPECT_TRUE(raw->Get(rocksdb::ReadOptions(), "their-key", &value).ok());
  EXPECT_EQ(value, "their-value");
  delete raw;
}

// Opens `path` with every column family it has and runs `edit` on the meta
// (default) family's handle. `keep_wal`: the recovered WAL is not flushed,
// so it still holds what was in it, and the edit.
template <typename Edit>
void EditRaw(const std::string& path, Edit edit, bool keep_wal = false) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::DBOptions options;
  options.avoid_flush_during_recovery = keep_wal;
  ASSERT_TRUE(rocksdb::DB::Open(options, path, cfs, &handles, &raw).ok());
  edit(raw, handles[0]);
  for (auto* h : handles) ASSERT_TRUE(raw->DestroyColumnFamilyHandle(h).ok());
  delete raw;
}

TEST(DataDirectoryTest, ADirectoryIsMarkedWithItsFormatAndANewerOneIsRefused) {
  TempDir dir;
  const std::string path = dir.Sub("db");
  std::string before;
  MakeSidetableDirectory(path, &before);
  EXPECT_EQ(ReadText(FormatFile(path)), "sidetable data format 1\n");
  WriteFormatFile(path, "sidetable data format 2\n");
  EditRaw(path, [](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
    std::string v;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), meta, internal::kMetaFormatVersion, &v).ok());
    EXPECT_EQ(v, "1");
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), meta, internal::kMetaFormatVersion, "2").ok());
  });

  auto e = Engine::Open(Options(), path);
  ASSERT_FALSE(e.ok()) << "a directory of a newer format was opened";
  EXPECT_EQ(e.status().code(), Code::kUnavailable);
  EXPECT_NE(e.status().message().find("format version 2, written by a newer sidetable"),
            std::string::npos)
      << e.status().ToString();

  // Directories from before the mark open, and are marked (the file too).
  EditRaw(path, [](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
    ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), meta, internal::kMetaFormatVersion).ok());
  });
  fs::remove(FormatFile(path));
  {
    auto reopened = Engine::Open(Options(), path);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    EXPECT_EQ(DumpState(**reopened), before);
  }
  EditRaw(path, [](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
    std::string v;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), meta, internal::kMetaFormatVersion, &v).ok());
    EXPECT_EQ(v, "1");
  });
  EXPECT_EQ(ReadText(FormatFile(path)), "sidetable data format 1\n");
}

// A rollback: an older build started on a newer build's directory. It used
// to read the mark only after RocksDB's read-write open, which had flushed
// the recovered WAL into a table file written with the older build's
// options, written a new MANIFEST and OPTIONS file and deleted the WAL (found
// from outside by session 43); now the directory is as it was, byte for byte.
TEST(DataDirectoryTest, ANewerFormatIsRefusedBeforeRocksDbChangesAnything) {
  TempDir dir;
  const std::string path = dir.Sub("db");
  std::string before;
  MakeSidetableDirectory(path, &before);
  AddRowsToTheWal(path, &before);  // the newer build's last rows
  // Its mark, in the WAL too.
  EditRaw(
      path,
      [](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
        ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), meta, internal::kMetaFormatVersion, "2").ok());
      },
      /*keep_wal=*/true);
  ASSERT_GT(WalBytes(path), 1000u) << "the rows were flushed: the WAL is not tested";

  // With the newer build's format file, and without it (a backup holds
  // RocksDB's files only; builds of sessions 39-43 wrote no file): the mark
  // is then read from the WAL by a read-only open.
  for (const bool with_file : {true, false}) {
    if (with_file) {
      WriteFormatFile(path, "sidetable data format 2\n");
    } else {
      fs::remove(FormatFile(path));
    }
    const std::string files = Listing(path);
    for (int attempt = 0; attempt < 2; attempt++) {  // a supervisor's restart too
      auto e = Engine::Open(Options(), path);
      ASSERT_FALSE(e.ok()) << "a directory of a newer format was opened, file: " << with_file;
      EXPECT_NE(e.status().message().find("format version 2, written by a newer sidetable"),
                std::string::npos)
          << e.status().ToString();
      EXPECT_EQ(Listing(path), files)
          << "the refused open changed the directory, file: " << with_file;
    }
  }

  // The newer build (here: the mark taken back) finds its data as it left it.
  EditRaw(path, [](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta) {
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), meta, internal::kMetaFormatVersion, "1").ok());
  });
  auto reopened = Engine::Open(Options(), path);
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ(DumpState(**reopened), before);
}

// Counts the write-ahead logs opened for reading: what a replay does.
class WalReadCounter : public rocksdb::EnvWrapper {
 public:
  WalReadCounter() : rocksdb::EnvWrapper(rocksdb::Env::Default()) {}
  const char* Name() const override { return "WalReadCounter"; }
  rocksdb::Status NewSequentialFile(const std::string& f,
                                    std::unique_ptr<rocksdb::SequentialFile>* r,
                                    const rocksdb::EnvOptions& o) override {
    if (f.size() > 4 && f.ends_with(".log")) wal_reads++;
    return rocksdb::EnvWrapper::NewSequentialFile(f, r, o);
  }
  int wal_reads = 0;
};

// The format's file spares a start the read-only open that replays the
// whole WAL only to read the mark (session 43's look; on a busy host a
// median 1.6x a start with 120 MB of WAL after a kill -9). A missing or unreadable file falls
// back to that look, and the next open writes the file again.
TEST(DataDirectoryTest, AStartReadsTheFormatFromItsFileWithoutReplayingTheWal) {
  TempDir dir;
  const std::string path = dir.Sub("db");
  std::string before;
  MakeSidetableDirectory(path, &before);
  AddRowsToTheWal(path, &before);
  ASSERT_GT(WalBytes(path), 1000u) << "the rows were flushed: the WAL is not tested";
  ASSERT_EQ(ReadText(FormatFile(path)), "sidetable data format 1\n");

  auto inspect = [&](bool expect_file) {
    WalReadCounter env;
    rocksdb::DBOptions db;
    db.env = &env;
    auto d = internal::InspectDataDirectory(&env, db, path);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_TRUE(d->exists);
    EXPECT_EQ(d->format_file.has_value(), expect_file);
    if (expect_file) EXPECT_EQ(*d->format_file, "1");
    if (expect_file) {
      EXPECT_EQ(env.wal_reads, 0) << "the WAL was replayed although the file gave the format";
    } else {
      EXPECT_GT(env.wal_reads, 0) << "without the file the format must come from the database";
    }
  };
  inspect(true);

  // Missing, torn, or not in its form: the database decides, and the open
  // writes the file again.
  for (const char* text : {"", "sidetable data fo", "sidetable data format 1",
                           "sidetable data format x\n", "sidetable data format 1\nmore\n"}) {
    if (*text == '\0') {
      fs::remove(FormatFile(path));
    } else {
      WriteFormatFile(path, text);
    }
    inspect(false);
    auto e = Engine::Open(Options(), path);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_EQ(DumpState(**e), before);
    EXPECT_EQ(ReadText(FormatFile(path)), "sidetable data format 1\n") << "after '" << text << "'";
  }
  EXPECT_FALSE(fs::exists(FormatFile(path) + ".tmp"));
  inspect(true);
}

TEST(DataDirectoryTest, AnUnknownColumnFamilyIsRefused) {
  TempDir dir;
  const std::string path = dir.Sub("db");
  std::string before;
  MakeSidetableDirectory(path, &before);
  EditRaw(path, [](rocksdb::DB* db, rocksdb::ColumnFamilyHandle*) {
    rocksdb::ColumnFamilyHandle* h = nullptr;
    ASSERT_TRUE(db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), "from-the-future", &h).ok());
    ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  });
  auto e = Engine::Open(Options(), path);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("column family 'from-the-future'"), std::string::npos)
      << e.status().ToString();
}

TEST(DataDirectoryTest, APathThatIsAFileIsNotCalledInUse) {
  TempDir dir;
  const std::string path = dir.Sub("afile");
  std::ofstream(path) << "not a directory\n";
  auto e = Engine::Open(Options(), path);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("it is not a directory"), std::string::npos)
      << e.status().ToString();
  EXPECT_EQ(e.status().message().find("in use by another process"), std::string::npos)
      << e.status().ToString();
}

}  // namespace
}  // namespace sidetable::testing
