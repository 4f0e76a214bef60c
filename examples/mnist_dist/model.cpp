#include "model.h"

namespace mnist {

NetImpl::NetImpl()
    : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 20, 5)))),
      conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(20, 50, 5)))),
      fc1(register_module("fc1", torch::nn::Linear(800, 500))),
      fc2(register_module("fc2", torch::nn::Linear(500, 10))) {}

torch::Tensor NetImpl::forward(torch::Tensor x) {
  x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);  // 20 x 12 x 12
  x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);  // 50 x 4 x 4
  x = torch::relu(fc1->forward(x.view({-1, 800})));
  return torch::log_softmax(fc2->forward(x), 1);
}

}  // namespace mnist
