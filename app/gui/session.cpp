#include "app/gui/session.h"

#include <algorithm>

#include <QFile>
#include <QFileInfo>
#include <QStringDecoder>

#include "app/gui/inference_worker.h"

namespace poslens::gui {

Session::Session(QObject* parent) : QObject(parent) {
  qRegisterMetaType<RunInput>();
  worker_ = new InferenceWorker;
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connectWorker();
  thread_.start();
}

Session::~Session() {
  dropAllWork();
  thread_.quit();
  thread_.wait();
}

void Session::connectWorker() {
  // Queued: the worker emits on its thread, the Session's state lives on the GUI thread.
  connect(worker_, &InferenceWorker::jobDone, this, &Session::onJobDone);
  connect(worker_, &InferenceWorker::progress, this, [this](quint64 g, int done, int total) {
    if (current(g)) emit progress(done, total);
  });
  connect(worker_, &InferenceWorker::failed, this,
          [this](quint64 g, const QString& title, const QString& message) {
            if (current(g)) emit failed(title, message);
          });
  connect(worker_, &InferenceWorker::opened, this, [this](quint64 g, const ModelSummary& m) {
    // Not current(g): a cancel that reached the running open after the worker had installed
    // the model cannot undo that, so the session must follow the worker (else a later run
    // would use a model the views do not know).
    if (!running_ || running_->ticket.generation != g) return;
    // New interventions on a model whose run was shown: the same input runs again, so the
    // grid shows the intervened model at once.
    const bool intervened = running_->tag == QStringLiteral("intervene");
    const bool rerun = intervened && last_run_.has_value();
    interventions_ = intervened ? running_->specs : QStringList();
    model_ = m;
    last_run_.reset();
    selected_ = {-1, -1};
    if (m.views.contains(preferred_view_))
      view_ = preferred_view_;
    else if (!m.views.contains(view_))
      view_ = QStringLiteral("hook_pattern");
    emit modelOpened(m);
    emit viewChanged(view_);
    if (rerun) run();
  });
  connect(worker_, &InferenceWorker::runFinished, this, [this](quint64 g, const RunSummary& r) {
    if (!current(g)) return;
    last_run_ = r;
    last_run_input_ = running_->input;
    const bool keep = selected_.first >= 0 && selected_.first < r.n_layers &&
                      selected_.second >= 0 && selected_.second < r.n_heads;
    emit runFinished(r);
    selectHead(keep ? selected_.first : 0, keep ? selected_.second : 0);
  });
  connect(worker_, &InferenceWorker::headReady, this, [this](quint64 g, const HeatmapData& map) {
    if (!current(g)) return;
    if (running_->tag == "region")
      emit regionReady(map);
    else
      emit headReady(map);
  });
  connect(worker_, &InferenceWorker::exported, this, [this](quint64 g, const QString& path) {
    if (current(g)) emit exported(path);
  });
  connect(worker_, &InferenceWorker::result, this, [this](quint64 g, const std::any& value) {
    if (!current(g) || !running_->on_result) return;
    const QString tag = running_->tag;
    running_->on_result(value);
    emit jobFinished(tag);
  });
  // InferenceWorker::cancelled needs no handler: cancel() already told the views, and a job
  // cancelled because a newer one replaced it is not news.
}

void Session::setLoadOptions(const QString& device, const QString& dtype) {
  device_ = device;
  dtype_ = dtype;
}

void Session::open(const QString& path) {
  dropAllWork();  // work queued for the old model is meaningless for the new one
  Job job;
  job.tag = QStringLiteral("open");
  job.busy_text = tr("Loading %1…").arg(QFileInfo(path).fileName());
  const QString device = device_, dtype = dtype_;
  job.body = [path, device, dtype](InferenceWorker& w, const JobTicket& t) {
    w.open(t, path, device, dtype);
  };
  enqueue(std::move(job));
}

void Session::setInterventions(const QStringList& specs) {
  dropAllWork();  // what is queued was asked of the model as it runs now
  Job job;
  job.tag = QStringLiteral("intervene");
  job.specs = specs;
  job.busy_text = specs.isEmpty() ? tr("Restoring the checkpoint as stored…") : tr("Applying %1…").arg(specs.join(", "));
  job.body = [specs](InferenceWorker& w, const JobTicket& t) { w.intervene(t, specs); };
  enqueue(std::move(job));
}

void Session::setInput(const RunInput& input) {
  if (input == input_) return;
  input_ = input;
  emit inputChanged(input_);
}

void Session::openInputText(const QString& path) {
  const QString title = tr("Cannot open the input text");
  QFile file(path);
  if (!QFileInfo(path).isFile() || !file.open(QIODevice::ReadOnly)) {
    emit failed(title, tr("%1: not found or not a readable file").arg(path));
    return;
  }
  if (file.size() > kMaxInputTextBytes) {
    emit failed(title, tr("%1: %2 MB, more than the input box takes (%3 MB; poslens-cli --text-file "
                          "takes up to 256 MB)")
                           .arg(path)
                           .arg(file.size() >> 20)
                           .arg(kMaxInputTextBytes >> 20));
    return;
  }
  QStringDecoder utf8(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
  const QString text = utf8.decode(file.readAll());
  if (utf8.hasError()) {
    emit failed(title, tr("%1: not UTF-8 text").arg(path));
    return;
  }
  auto input = input_;
  input.text = text;
  setInput(input);
}

void Session::run() {
  const bool opening = (running_ && running_->tag == "open") || queued("open");
  if (!model_ && !opening) {
    emit failed(tr("Nothing to run"), tr("Open a checkpoint first (File ▸ Open)."));
    return;
  }
  if (input_.text.trimmed().isEmpty()) {
    emit failed(tr("Nothing to run"), tr("The input is empty: type some text or token ids."));
    return;
  }
  supersede(QStringLiteral("head"));  // heads of the previous run
  supersede(QStringLiteral("region"));
  Job job;
  job.tag = QStringLiteral("run");
  job.busy_text = tr("Running…");
  job.input = input_;
  const RunInput input = input_;
  const QString view = view_;
  job.body = [input, view](InferenceWorker& w, const JobTicket& t) { w.run(t, input, view); };
  enqueue(std::move(job));
}

void Session::setView(const QString& view) {
  if (view.isEmpty() || view == view_) return;
  view_ = view;
  emit viewChanged(view_);
  if (last_run_ || queued("run") || (running_ && running_->tag == "run")) run();  // runs capture only the shown view
}

void Session::selectHead(int layer, int head) {
  if (selected_ != std::make_pair(layer, head)) {
    selected_ = {layer, head};
    emit headSelected(layer, head);
  }
  if (!last_run_ || layer < 0 || head < 0) return;
  supersede(QStringLiteral("region"));  // of the previous head
  HeadRequest request;
  request.layer = layer;
  request.head = head;
  enqueueHead(QStringLiteral("head"), request);
}

void Session::requestRegion(int layer, int head, qint64 q0, qint64 q1, qint64 k0, qint64 k1) {
  if (!last_run_ || layer < 0 || head < 0) return;
  HeadRequest request;
  request.layer = layer;
  request.head = head;
  request.region = true;
  request.q0 = q0, request.q1 = q1, request.k0 = k0, request.k1 = k1;
  enqueueHead(QStringLiteral("region"), request);
}

void Session::enqueueHead(const QString& tag, HeadRequest request) {
  request.view = last_run_->view;
  request.cells = kHeadMapCells;
  Job job;
  job.tag = tag;
  job.body = [request](InferenceWorker& w, const JobTicket& t) { w.head(t, request); };
  // The map is what the user looks at, and takes milliseconds; a queued probe takes minutes.
  enqueue(std::move(job), true);
}

void Session::setExportCaptures(const QString& captures) { export_captures_ = captures; }

void Session::exportCaptures(const QString& path) {
  // The export is of what is (or is about to be) shown: the newest run's input.
  std::optional<RunInput> shown;
  if (last_run_) shown = last_run_input_;
  if (running_ && running_->tag == "run" && !running_->ticket.cancelled()) shown = running_->input;
  for (const auto& job : queue_)
    if (job.tag == "run") shown = job.input;
  if (!shown) {
    emit failed(tr("Nothing to export"), tr("Run the model before exporting its captures."));
    return;
  }
  Job job;
  job.tag = QStringLiteral("export");
  job.busy_text = tr("Writing %1…").arg(path);
  const RunInput input = *shown;
  const QString captures = export_captures_;
  job.body = [path, input, captures](InferenceWorker& w, const JobTicket& t) {
    w.exportCaptures(t, path, input, captures);
  };
  enqueue(std::move(job));
}

bool Session::ready(const QString& title, bool needs_input) {
  const bool opening = (running_ && running_->tag == "open") || queued("open");
  if (!model_ && !opening) {
    emit failed(title, tr("Open a checkpoint first (File ▸ Open)."));
    return false;
  }
  if (needs_input && input_.text.trimmed().isEmpty()) {
    emit failed(title, tr("The input is empty: type some text or token ids."));
    return false;
  }
  return true;
}

void Session::submit(const QString& tag, const QString& busy_text, Work work,
                     std::function<void(const std::any&)> on_result) {
  Job job;
  job.tag = tag;
  job.busy_text = busy_text;
  job.on_result = std::move(on_result);
  job.body = [work = std::move(work)](InferenceWorker& w, const JobTicket& t) { w.execute(t, work); };
  enqueue(std::move(job));
}

void Session::dropAllWork() {
  for (auto& job : queue_) job.ticket.cancel->store(true);
  queue_.clear();
  if (running_) running_->ticket.cancel->store(true);  // the worker stops at the next layer
}

void Session::cancel() {
  std::vector<QString> tags;
  for (auto& job : queue_) {
    job.ticket.cancel->store(true);
    tags.push_back(job.tag);
  }
  queue_.clear();
  if (running_ && !running_->ticket.cancelled()) {
    running_->ticket.cancel->store(true);  // the worker stops at the next layer
    tags.push_back(running_->tag);
  }
  updateBusy();
  for (const auto& tag : tags) emit cancelled(tag);
}

bool Session::isBusy() const { return busy_; }

void Session::enqueue(Job job, bool ahead_of_analyses) {
  supersede(job.tag);
  job.ticket.generation = ++next_generation_;
  auto at = queue_.end();
  if (ahead_of_analyses)  // before the first queued analysis; behind the opens and runs ahead of it
    at = std::find_if(queue_.begin(), queue_.end(), [](const Job& j) { return j.tag != "open" && j.tag != "run"; });
  queue_.insert(at, std::move(job));
  dispatchNext();
  updateBusy();
}

void Session::supersede(const QString& tag) {
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->tag == tag) {
      it->ticket.cancel->store(true);
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  if (running_ && running_->tag == tag) running_->ticket.cancel->store(true);
}

void Session::dispatchNext() {
  if (running_ || queue_.empty()) return;
  running_ = std::move(queue_.front());
  queue_.pop_front();
  // The worker frees the last run's captures before a new run (memory), so from here on only
  // the new run's result can be shown.
  if (running_->tag == "run") last_run_.reset();
  emit jobStarted(running_->tag, running_->ticket.generation);
  // One job at a time: the next is sent when this one's jobDone() comes back, so a job that
  // waits here can still be replaced or cancelled without the worker ever seeing it.
  QMetaObject::invokeMethod(
      worker_,
      [worker = worker_, ticket = running_->ticket, body = running_->body] {
        body(*worker, ticket);
        emit worker->jobDone(ticket.generation);
      },
      Qt::QueuedConnection);
}

bool Session::queued(const QString& tag) const {
  for (const auto& job : queue_)
    if (job.tag == tag) return true;
  return false;
}

bool Session::current(quint64 generation) const {
  return running_ && running_->ticket.generation == generation && !running_->ticket.cancelled();
}

void Session::onJobDone(quint64 generation) {
  if (!running_ || running_->ticket.generation != generation) return;
  const bool run_lost = running_->tag == "run" && !last_run_ && !queued("run");
  running_.reset();
  if (run_lost) emit runCleared();
  dispatchNext();
  updateBusy();
}

void Session::updateBusy() {
  QString what;
  if (running_ && !running_->ticket.cancelled()) what = running_->busy_text;
  for (const auto& job : queue_)
    if (what.isEmpty()) what = job.busy_text;
  const bool busy = !what.isEmpty();
  if (busy == busy_ && (!busy || what == busy_what_)) return;
  busy_ = busy;
  busy_what_ = what;
  emit busyChanged(busy, what);
}

}  // namespace poslens::gui
