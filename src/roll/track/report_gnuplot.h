#pragma once
// The charts of `roll report` as one gnuplot script (data inline as datablocks, so the script
// alone redraws them: `cd report && gnuplot charts.gp`), and running Debian's gnuplot on it.
#include <chrono>
#include <string>
#include <vector>

#include "roll/track/report_charts.h"
#include "roll/track/run_metrics.h"

namespace roll::track {

// PNGs are written to <chart id>.png relative to gnuplot's working folder; pngcairo when this
// gnuplot has it, else the libgd png terminal.
std::string gnuplot_script(const std::vector<Chart>& charts, const RunMetrics& run);

// Runs `gnuplot -e "cd '<dir>'" <script>` (gnuplot found on PATH). roll::Error when gnuplot is not
// installed, fails (with its last output lines) or runs longer than `timeout`.
void run_gnuplot(const std::string& script, const std::string& dir,
                 std::chrono::milliseconds timeout = std::chrono::seconds(120));

}  // namespace roll::track
