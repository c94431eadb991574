// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice Chainlink-style aggregator with an owner-set answer.
contract PriceFeed {
    event AnswerUpdated(int256 indexed current, uint256 indexed roundId, uint256 updatedAt);

    uint8 public immutable decimals;
    string public description;
    address public owner;
    int256 private _answer;
    uint80 private _roundId;
    uint256 private _updatedAt;

    constructor(uint8 decimals_, string memory description_, int256 initialAnswer) {
        decimals = decimals_;
        description = description_;
        owner = msg.sender;
        _setAnswer(initialAnswer);
    }

    function setAnswer(int256 answer) external {
        require(msg.sender == owner, "PriceFeed: not owner");
        _setAnswer(answer);
    }

    function _setAnswer(int256 answer) private {
        require(answer > 0, "PriceFeed: non-positive answer");
        _answer = answer;
        _roundId += 1;
        _updatedAt = block.timestamp;
        emit AnswerUpdated(answer, _roundId, block.timestamp);
    }

    function latestAnswer() external view returns (int256) {
        return _answer;
    }

    function latestRoundData()
        external
        view
        returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)
    {
        return (_roundId, _answer, _updatedAt, _updatedAt, _roundId);
    }
}
