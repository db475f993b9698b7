#include "sampler/process_table.h"

#include <sys/mman.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace nativeprof::sampler {
namespace {

MmapView Code(uint32_t pid, uint64_t start, uint64_t len, std::string_view file,
              uint64_t inode = 1) {
  MmapView m;
  m.pid = pid;
  m.tid = pid;
  m.start_avma = start;
  m.length = len;
  m.file_offset = 0;
  m.dev_major = 8;
  m.dev_minor = 1;
  m.inode = inode;
  m.prot = PROT_READ | PROT_EXEC;
  m.filename = file;
  m.executable = true;
  return m;
}

CommView Comm(uint32_t pid, uint32_t tid, std::string_view name, bool exec) {
  CommView c;
  c.pid = pid;
  c.tid = tid;
  c.comm = name;
  c.exec = exec;
  return c;
}

TaskView Fork(uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid) {
  TaskView t;
  t.pid = pid;
  t.ppid = ppid;
  t.tid = tid;
  t.ptid = ptid;
  return t;
}

class ProcessTableTest : public ::testing::Test {
 protected:
  ModuleRegistry modules_;
  ProcessTable table_{&modules_};
};

TEST_F(ProcessTableTest, MmapInternsModulesAcrossProcesses) {
  table_.ApplyMmap(Code(1, 0x400000, 0x1000, "/bin/a", 11));
  table_.ApplyMmap(Code(2, 0x500000, 0x1000, "/bin/a", 11));
  table_.ApplyMmap(Code(2, 0x600000, 0x1000, "/bin/b", 12));
  const Process* p1 = table_.Find(1);
  const Process* p2 = table_.Find(2);
  ASSERT_NE(p1, nullptr);
  ASSERT_NE(p2, nullptr);
  const Mapping* a1 = p1->address_space.Find(0x400010);
  const Mapping* a2 = p2->address_space.Find(0x500010);
  const Mapping* b2 = p2->address_space.Find(0x600010);
  ASSERT_NE(a1, nullptr);
  ASSERT_NE(a2, nullptr);
  ASSERT_NE(b2, nullptr);
  EXPECT_EQ(a1->module, a2->module);
  EXPECT_NE(a1->module, b2->module);
  EXPECT_EQ(modules_.size(), 2u);
  EXPECT_EQ(modules_.Get(a1->module).path, "/bin/a");
  EXPECT_EQ(modules_.Get(a1->module).inode, 11u);
  EXPECT_EQ(modules_.Get(a1->module).first_pid, 1);
}

TEST_F(ProcessTableTest, MmapKeepsBuildIdAsHexAndSkipsDataMappings) {
  uint8_t id[4] = {0xde, 0xad, 0x0b, 0xef};
  MmapView m = Code(1, 0x400000, 0x1000, "/bin/a");
  m.build_id = id;
  table_.ApplyMmap(m);
  MmapView data = Code(1, 0x800000, 0x1000, "/bin/a");
  data.executable = false;
  data.prot = PROT_READ | PROT_WRITE;
  table_.ApplyMmap(data);
  const Process* p = table_.Find(1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->address_space.size(), 1u);
  EXPECT_EQ(modules_.Get(p->address_space.Find(0x400000)->module).build_id, "dead0bef");
  EXPECT_EQ(p->address_space.Find(0x800000), nullptr);
}

TEST_F(ProcessTableTest, ExecCommClearsMappingsAndThreadNames) {
  table_.ApplyMmap(Code(1, 0x400000, 0x1000, "/bin/sh"));
  table_.ApplyComm(Comm(1, 1, "sh", false));
  table_.ApplyComm(Comm(1, 2, "helper", false));
  const uint64_t gen = table_.Find(1)->address_space.generation();
  table_.ApplyComm(Comm(1, 1, "workload", true));
  const Process* p = table_.Find(1);
  EXPECT_EQ(p->address_space.size(), 0u);
  EXPECT_NE(p->address_space.generation(), gen);
  EXPECT_EQ(p->name, "workload");
  EXPECT_EQ(table_.ThreadName(*p, 1), "workload");
  // Thread 2 died in the exec; its name is gone with it.
  EXPECT_EQ(table_.ThreadName(*p, 2), "workload");
}

TEST_F(ProcessTableTest, NonExecCommOfAThreadRenamesOnlyThatThread) {
  table_.ApplyComm(Comm(1, 1, "main", true));
  table_.ApplyMmap(Code(1, 0x400000, 0x1000, "/bin/main"));
  table_.ApplyComm(Comm(1, 3, "io-thread", false));
  const Process* p = table_.Find(1);
  EXPECT_EQ(p->name, "main");
  EXPECT_EQ(table_.ThreadName(*p, 3), "io-thread");
  EXPECT_EQ(table_.ThreadName(*p, 1), "main");
  EXPECT_EQ(p->address_space.size(), 1u);
}

TEST_F(ProcessTableTest, ForkCopiesParentMappingsAndName) {
  table_.ApplyComm(Comm(10, 10, "parent", true));
  table_.ApplyMmap(Code(10, 0x400000, 0x2000, "/bin/parent"));
  table_.ApplyComm(Comm(10, 11, "spawner", false));
  table_.ApplyTask(Fork(20, 10, 20, 11));  // thread 11 forks
  const Process* child = table_.Find(20);
  ASSERT_NE(child, nullptr);
  ASSERT_NE(child->address_space.Find(0x401000), nullptr);
  EXPECT_EQ(child->address_space.Find(0x401000)->module,
            table_.Find(10)->address_space.Find(0x401000)->module);
  // The child's name is that of the forking thread.
  EXPECT_EQ(child->name, "spawner");
  EXPECT_EQ(table_.ThreadName(*child, 20), "spawner");
  // Independent copies: a later map in the child leaves the parent alone.
  table_.ApplyMmap(Code(20, 0x900000, 0x1000, "/lib/x.so", 5));
  EXPECT_EQ(table_.Find(10)->address_space.Find(0x900000), nullptr);
  EXPECT_EQ(table_.Find(10)->address_space.size(), 1u);
  EXPECT_EQ(table_.process_count(), 2u);
}

TEST_F(ProcessTableTest, NewThreadInheritsItsCreatorsName) {
  table_.ApplyComm(Comm(1, 1, "server", true));
  table_.ApplyComm(Comm(1, 2, "pool", false));
  table_.ApplyTask(Fork(1, 1, 3, 2));  // thread 2 creates thread 3
  table_.ApplyTask(Fork(1, 1, 4, 1));  // main creates thread 4
  const Process* p = table_.Find(1);
  EXPECT_EQ(table_.ThreadName(*p, 3), "pool");
  EXPECT_EQ(table_.ThreadName(*p, 4), "server");
  EXPECT_EQ(table_.process_count(), 1u);
}

TEST_F(ProcessTableTest, ThreadNameFallsBackToProcessNameThenPid) {
  table_.ApplyComm(Comm(5, 5, "proc", false));
  const Process* p = table_.Find(5);
  EXPECT_EQ(table_.ThreadName(*p, 99), "proc");
  // A process seen only through a sample has no name yet: "[pid]", as the header promises.
  Process& unnamed = table_.GetOrCreate(77);
  EXPECT_EQ(table_.ThreadName(unnamed, 78), "[77]");
}

TEST_F(ProcessTableTest, ChildOfAnUnnamedProcessIsNamedByItsOwnPid) {
  table_.GetOrCreate(30);
  table_.ApplyTask(Fork(31, 30, 31, 30));
  table_.ApplyTask(Fork(31, 31, 32, 31));  // and a thread of it
  const Process* child = table_.Find(31);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(table_.ThreadName(*child, 31), "[31]");
  EXPECT_EQ(table_.ThreadName(*child, 32), "[31]");
  // Once the child's COMM arrives, its threads without their own name follow it.
  table_.ApplyComm(Comm(31, 31, "child", false));
  EXPECT_EQ(table_.ThreadName(*child, 32), "child");
}

TEST_F(ProcessTableTest, ExitMarksOnlyTheMainThreadsExit) {
  table_.ApplyComm(Comm(1, 1, "p", true));
  TaskView exit_thread = Fork(1, 1, 2, 1);
  exit_thread.exit = true;
  table_.ApplyTask(exit_thread);
  EXPECT_FALSE(table_.Find(1)->exited);
  TaskView exit_main = Fork(1, 0, 1, 0);
  exit_main.exit = true;
  table_.ApplyTask(exit_main);
  EXPECT_TRUE(table_.Find(1)->exited);
}

}  // namespace
}  // namespace nativeprof::sampler
