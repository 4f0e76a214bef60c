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
  // The fully connected layers, computed as convolutions over the same
  // weights: fc1 on the flattened 50x4x4 map is a 4x4 convolution with 500
  // output channels, fc2 a 1x1 one. Same numbers, but they run on LibTorch's
  // oneDNN convolution instead of the system BLAS, which on a stock Debian
  // install is the unoptimized reference one (2x slower per step here).
  x = torch::relu(torch::conv2d(x, fc1->weight.view({500, 50, 4, 4}), fc1->bias));
  x = torch::conv2d(x, fc2->weight.view({10, 500, 1, 1}), fc2->bias);
  return torch::log_softmax(x.view({-1, 10}), 1);
}

}  // namespace mnist
