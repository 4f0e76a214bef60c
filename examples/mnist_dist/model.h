// The network of the classic PyTorch MNIST example: two 5x5 convolutions with
// max-pooling, two fully connected layers, log-softmax.
#pragma once

#include <torch/torch.h>

namespace mnist {

struct NetImpl : torch::nn::Module {
  NetImpl();
  torch::Tensor forward(torch::Tensor x);

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

}  // namespace mnist
