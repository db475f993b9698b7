// A RecordSink for tests that copies every delivered view into owned values (views are only
// valid during the callback).
#ifndef NATIVEPROF_TESTS_UNIT_SAMPLER_RECORDING_SINK_H_
#define NATIVEPROF_TESTS_UNIT_SAMPLER_RECORDING_SINK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sampler/records.h"

namespace nativeprof::sampler {

struct OwnedSample {
  SampleView view;  // spans cleared; copies below
  std::vector<uint64_t> callchain, regs_user;
  std::vector<uint8_t> stack_user;
};
struct OwnedMmap {
  MmapView view;
  std::vector<uint8_t> build_id;
  std::string filename;
};
struct OwnedComm {
  CommView view;
  std::string comm;
};

class RecordingSink : public RecordSink {
 public:
  void OnSample(const SampleView& s) override {
    OwnedSample o;
    o.view = s;
    o.callchain.assign(s.callchain.begin(), s.callchain.end());
    o.regs_user.assign(s.regs_user.begin(), s.regs_user.end());
    o.stack_user.assign(s.stack_user.begin(), s.stack_user.end());
    o.view.callchain = {};
    o.view.regs_user = {};
    o.view.stack_user = {};
    samples.push_back(std::move(o));
  }
  void OnMmap(const MmapView& m) override {
    OwnedMmap o;
    o.view = m;
    o.build_id.assign(m.build_id.begin(), m.build_id.end());
    o.filename = std::string(m.filename);
    o.view.build_id = {};
    o.view.filename = {};
    mmaps.push_back(std::move(o));
  }
  void OnComm(const CommView& c) override {
    OwnedComm o;
    o.view = c;
    o.comm = std::string(c.comm);
    o.view.comm = {};
    comms.push_back(std::move(o));
  }
  void OnTask(const TaskView& t) override { tasks.push_back(t); }
  void OnLost(const LostView& l) override { losts.push_back(l); }
  void OnThrottle(const ThrottleView& t) override { throttles.push_back(t); }
  void OnRead(const ReadView& r) override { reads.push_back(r); }
  void OnSwitch(const SwitchView& s) override { switches.push_back(s); }

  size_t total() const {
    return samples.size() + mmaps.size() + comms.size() + tasks.size() + losts.size() +
           throttles.size() + reads.size();
  }

  std::vector<OwnedSample> samples;
  std::vector<OwnedMmap> mmaps;
  std::vector<OwnedComm> comms;
  std::vector<TaskView> tasks;
  std::vector<LostView> losts;
  std::vector<ThrottleView> throttles;
  std::vector<ReadView> reads;
  std::vector<SwitchView> switches;
};

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_TESTS_UNIT_SAMPLER_RECORDING_SINK_H_
