#include "watch_view.h"

#include <algorithm>
#include <cstdio>

#include "cli_common.h"
#include "rebalance_client.h"

namespace shardkv::cli {

using Clock = std::chrono::steady_clock;

namespace {

std::string Bar(double fraction, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * width);
  std::string bar(filled, '=');
  if (filled < width) bar += '>';
  bar.resize(width, ' ');
  return "[" + bar + "]";
}

std::string Eta(double remaining, double rate) {
  if (remaining <= 0) return "ETA 0s";
  return rate > 0 ? "ETA " + HumanSeconds(remaining / rate) : "ETA -";
}

std::string ProgressFields(uint64_t copies_done, uint64_t copies_planned, uint64_t bytes_done,
                           uint64_t bytes_planned, double byte_rate) {
  return "copies " + std::to_string(copies_done) + "/" + std::to_string(copies_planned) + "  " +
         HumanBytes(static_cast<double>(bytes_done)) + " of " +
         HumanBytes(static_cast<double>(bytes_planned)) + "  " + HumanBytes(byte_rate) + "/s  " +
         Eta(static_cast<double>(bytes_planned) - static_cast<double>(bytes_done), byte_rate);
}

double Done(uint64_t copies_done, uint64_t copies_planned, uint64_t ranges_done,
            uint64_t ranges_total) {
  if (copies_planned > 0) return Ratio(static_cast<double>(copies_done), copies_planned);
  return ranges_total > 0 ? Ratio(static_cast<double>(ranges_done), ranges_total) : 0.0;
}

}  // namespace

void Rate::Add(double value, Clock::time_point now) {
  if (have_) {
    const double dt = std::chrono::duration<double>(now - at_).count();
    if (dt > 0.05) {
      const double instant = std::max(0.0, value - last_) / dt;
      rate_ = seeded_ ? 0.6 * rate_ + 0.4 * instant : instant;
      seeded_ = true;
    } else {
      return;
    }
  }
  have_ = true;
  last_ = value;
  at_ = now;
}

void WatchView::Show(const ChangeReport& r, const std::string& note) {
  const auto now = Clock::now();
  const bool streaming = r.record.state == ChangeState::kStreaming;
  if (r.from_driver && streaming) live_ = r;
  // A snapshot from a node that does not drive the change has no live progress: keep showing
  // the driver's last numbers until the driver (or its successor) answers again.
  const bool stale = streaming && !r.from_driver && live_.has_change &&
                     live_.record.change_id == r.record.change_id;
  const ChangeReport& shown = stale ? live_ : r;
  overall_.Add(static_cast<double>(shown.bytes_done), now);
  copies_rate_.Add(static_cast<double>(shown.copies_done), now);
  for (const StreamProgress& s : shown.streams) {
    rates_[{s.source, s.destination}].Add(static_cast<double>(s.bytes_done), now);
  }
  const ChangeRecord& rec = r.record;
  std::string head = "change " + std::to_string(rec.change_id) + " (" + DescribeChange(rec) +
                     "): " + StateName(r) + ", " + HumanSeconds(r.elapsed_s) + ", driver node " +
                     std::to_string(r.driver);
  if (!note.empty()) head += "  [" + note + "]";
  if (!r.from_driver && streaming) head += "  [driver not reachable: last live numbers]";
  const uint64_t planned_bytes = std::max(rec.planned_bytes, shown.bytes_done);
  if (!tty_) {
    std::printf("[%s] %s  %s\n", HumanSeconds(r.elapsed_s).c_str(), StateName(r).c_str(),
                ProgressFields(shown.copies_done, rec.planned_copies, shown.bytes_done,
                               planned_bytes, overall_.per_s())
                    .c_str());
    if (!note.empty()) std::printf("  (%s)\n", note.c_str());
    std::fflush(stdout);
    return;
  }
  std::vector<std::string> lines{head};
  constexpr size_t kMaxStreams = 16;
  for (size_t i = 0; i < shown.streams.size() && i < kMaxStreams; ++i) {
    const StreamProgress& s = shown.streams[i];
    char label[40];
    std::snprintf(label, sizeof(label), "  %u -> %u", s.source, s.destination);
    char line[400];
    std::snprintf(
        line, sizeof(line), "%-16s %s %5.1f%%  ranges %llu/%llu  %s", label,
        Bar(Done(s.copies_done, s.copies_planned, s.ranges_done, s.ranges_total), 20).c_str(),
        100 * Done(s.copies_done, s.copies_planned, s.ranges_done, s.ranges_total),
        static_cast<unsigned long long>(s.ranges_done),
        static_cast<unsigned long long>(s.ranges_total),
        ProgressFields(s.copies_done, s.copies_planned, s.bytes_done,
                       std::max(s.bytes_planned, s.bytes_done),
                       rates_[{s.source, s.destination}].per_s())
            .c_str());
    lines.push_back(line);
  }
  if (shown.streams.size() > kMaxStreams) {
    lines.push_back("  ... " + std::to_string(shown.streams.size() - kMaxStreams) +
                    " more streams");
  }
  // Past streaming every copy has moved; the later stages only switch reads and clean up.
  const bool streamed = rec.state != ChangeState::kStreaming && rec.state != ChangeState::kFailed;
  const double fraction = streamed ? 1.0 : Done(shown.copies_done, rec.planned_copies, 0, 0);
  char line[400];
  std::snprintf(line, sizeof(line), "%-16s %s %5.1f%%  %s  %.0f copies/s", "  overall",
                Bar(fraction, 20).c_str(), 100 * fraction,
                ProgressFields(shown.copies_done, rec.planned_copies, shown.bytes_done,
                               planned_bytes, overall_.per_s())
                    .c_str(),
                copies_rate_.per_s());
  lines.push_back(line);
  Draw(lines);
}

void WatchView::Note(const std::string& note) {
  if (tty_) {
    Draw({"rebalance watch: " + note});
    return;
  }
  const auto now = Clock::now();
  if (note == last_note_ && now - last_note_at_ < std::chrono::seconds(10)) return;
  last_note_ = note;
  last_note_at_ = now;
  std::printf("(%s)\n", note.c_str());
  std::fflush(stdout);
}

void WatchView::Draw(const std::vector<std::string>& lines) {
  std::string out;
  if (drawn_ > 0) out += "\033[" + std::to_string(drawn_) + "F";  // back to the first line
  for (const auto& l : lines) out += l + "\033[K\n";
  out += "\033[J";  // clear what a longer previous drawing left below
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
  drawn_ = lines.size();
}

}  // namespace shardkv::cli
