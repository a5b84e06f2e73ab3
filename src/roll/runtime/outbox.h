#pragma once
// A queue of multipart messages that any thread fills and one socket thread drains; an eventfd
// wakes the socket thread's zmq_poll (ZeroMQ sockets are not thread-safe).
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include <zmq.hpp>

namespace roll::runtime {

class Outbox {
 public:
  Outbox() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~Outbox() { close(fd_); }
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  int fd() const { return fd_; }

  void push(std::vector<zmq::message_t> frames) {
    {
      std::lock_guard<std::mutex> g(mu_);
      queue_.push_back(std::move(frames));
    }
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one);
  }

  // Everything queued so far (clears the wake-up counter).
  std::deque<std::vector<zmq::message_t>> take() {
    uint64_t count;
    [[maybe_unused]] ssize_t n = read(fd_, &count, sizeof count);
    std::lock_guard<std::mutex> g(mu_);
    return std::exchange(queue_, {});
  }

 private:
  int fd_;
  std::mutex mu_;
  std::deque<std::vector<zmq::message_t>> queue_;
};

// Sends one multipart message (frames are consumed).
inline void send_frames(zmq::socket_t& socket, std::vector<zmq::message_t>& frames) {
  for (size_t i = 0; i < frames.size(); ++i)
    socket.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

// zmq::poll that treats an interrupting signal (EINTR: the stack capture of thread_stacks.h) as
// "nothing ready"; false then, true after a completed poll.
inline bool poll_retrying_eintr(zmq::pollitem_t* items, size_t n, std::chrono::milliseconds timeout) {
  try {
    zmq::poll(items, n, timeout);
    return true;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    throw;
  }
}

// Receives one multipart message.
inline std::vector<zmq::message_t> recv_frames(zmq::socket_t& socket) {
  std::vector<zmq::message_t> frames;
  do {
    zmq::message_t m;
    if (!socket.recv(m, zmq::recv_flags::none)) break;
    frames.push_back(std::move(m));
  } while (socket.get(zmq::sockopt::rcvmore));
  return frames;
}

}  // namespace roll::runtime
